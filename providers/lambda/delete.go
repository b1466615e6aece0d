// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gpufleet/gpufleet/providers"
)

// Delete terminates an owned instance. It reads the instance first and
// refuses one whose name is not gpufleet's, or carries another token;
// one already gone, or going, is success.
func (p *Provider) Delete(ctx context.Context, inst providers.Instance) error {
	if inst.ID == "" {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "delete", Message: "a delete needs the instance's id"}
	}
	in, err := p.instance(ctx, "delete", inst.ID)
	if err != nil {
		if providers.KindOf(err) == providers.KindNotFound {
			return nil
		}
		return err
	}
	name := ""
	if in.Name != nil {
		name = *in.Name
	}
	_, _, token, owned := ParseNodeName(name)
	switch {
	case !owned:
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "delete",
			Message: fmt.Sprintf("instance %s (named %q) is not owned by gpufleet", inst.ID, name)}
	case inst.Token != "" && token != inst.Token:
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "delete",
			Message: fmt.Sprintf("instance %s carries token %q, not %q", inst.ID, token, inst.Token)}
	case in.Status == statusTerminating || in.Status == statusTerminated:
		return nil
	}
	body := struct {
		IDs []string `json:"instance_ids"`
	}{[]string{inst.ID}}
	if err := p.call(ctx, "delete", http.MethodPost, "/instance-operations/terminate", body, nil); err != nil {
		if providers.KindOf(err) == providers.KindNotFound {
			return nil
		}
		return err
	}
	return nil
}
