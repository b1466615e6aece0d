// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/providers"
)

// maxAnswer bounds one answer: the whole account's instances come in one,
// about a kilobyte each.
const maxAnswer = 64 << 20

// apiInstance is an instance as the API renders it. Only what gpufleet
// reads is decoded.
type apiInstance struct {
	ID           string          `json:"id"`
	Name         *string         `json:"name"`
	Status       string          `json:"status"`
	Region       apiRegion       `json:"region"`
	InstanceType apiInstanceType `json:"instance_type"`
}

type apiRegion struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type apiInstanceType struct {
	Name              string `json:"name"`
	PriceCentsPerHour int64  `json:"price_cents_per_hour"`
	Specs             struct {
		GPUs int `json:"gpus"`
	} `json:"specs"`
}

type apiTypeAvailability struct {
	InstanceType apiInstanceType `json:"instance_type"`
	Regions      []apiRegion     `json:"regions_with_capacity_available"`
}

type apiSSHKey struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type addSSHKeyRequest struct {
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
}

type launchRequest struct {
	RegionName       string    `json:"region_name"`
	InstanceTypeName string    `json:"instance_type_name"`
	SSHKeyNames      []string  `json:"ssh_key_names"`
	FileSystemNames  []string  `json:"file_system_names"`
	Quantity         int       `json:"quantity"`
	Name             string    `json:"name"`
	Image            *apiImage `json:"image,omitempty"`
	UserData         string    `json:"user_data,omitempty"`
}

type apiImage struct {
	Family string `json:"family"`
}

// apiErrorBody is the envelope of every error the API answers.
type apiErrorBody struct {
	Error struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Suggestion string `json:"suggestion"`
	} `json:"error"`
}

// call makes one request of the API, for op (list, create, …), and decodes
// the answer's data into out. Any failure is a *providers.Error.
func (p *Provider) call(ctx context.Context, op, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Message: fmt.Sprintf("encoding the request, %v", err)}
		}
	}
	u := *p.base
	u.Path += path
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u.String(), payload)
	if err != nil {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Message: fmt.Sprintf("%s %s: %v", method, path, err)}
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return p.transportError(op, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return p.transportError(op, method, path, err)
	}
	if len(raw) > maxAnswer {
		return &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Message: fmt.Sprintf("%s %s: the answer is over %d bytes", method, path, maxAnswer)}
	}
	if resp.StatusCode != http.StatusOK {
		return p.apiError(op, resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	envelope := struct {
		Data any `json:"data"`
	}{out}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		return &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Message: fmt.Sprintf("%s %s: decoding the answer, %v", method, path, err)}
	}
	return nil
}

// transportError is a request that got no answer: the network failed,
// the context ended, or the client refused to send it. The URL an error
// names carries no key (the key goes in a header), but url.Error's text is
// replaced by the method and path all the same.
func (p *Provider) transportError(op, method, path string, err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op,
		Message: p.redact(fmt.Sprintf("%s %s: %v", method, path, err)), Err: err}
}

// instances lists the whole account's instances; the API has no paging.
func (p *Provider) instances(ctx context.Context, op string) ([]apiInstance, error) {
	var out []apiInstance
	if err := p.call(ctx, op, http.MethodGet, "/instances", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// instance reads one instance by id.
func (p *Provider) instance(ctx context.Context, op, id string) (apiInstance, error) {
	var out apiInstance
	err := p.call(ctx, op, http.MethodGet, "/instances/"+url.PathEscape(id), nil, &out)
	return out, err
}

// typeAvailability is what /instance-types says: every type Lambda lists
// now, and where each has room.
type typeAvailability map[string]apiTypeAvailability

func (t typeAvailability) listed(typ string) bool {
	_, ok := t[typ]
	return ok
}

func (t typeAvailability) hasRoom(typ, region string) bool {
	for _, r := range t[typ].Regions {
		if r.Name == region {
			return true
		}
	}
	return false
}

func (p *Provider) instanceTypes(ctx context.Context, op string) (typeAvailability, error) {
	out := typeAvailability{}
	if err := p.call(ctx, op, http.MethodGet, "/instance-types", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}
