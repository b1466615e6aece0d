// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Delete terminates an owned instance. It reads the instance first and
// refuses one without gpufleet's tags, or of another fleet, whatever the
// caller believes; one already gone or going is a success.
func (p *Provider) Delete(ctx context.Context, inst providers.Instance) error {
	fail := func(err error) error { return classify("delete", inst.OfferKey, err) }
	refuse := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: "delete", Offer: inst.OfferKey, Message: fmt.Sprintf(format, args...)}
	}
	if inst.ID == "" {
		return refuse("no instance id")
	}
	client, err := p.client("delete", inst.Region)
	if err != nil {
		return err
	}

	current, found, err := p.describe(ctx, client, inst.ID)
	switch {
	case err != nil:
		return fail(err)
	case !found:
		return nil
	}
	fleet, _, _, owned := providers.Owned(tagMap(current.Tags))
	switch {
	case !owned:
		return refuse("instance %s is not owned by gpufleet", inst.ID)
	case inst.Fleet != "" && fleet != inst.Fleet:
		return refuse("instance %s belongs to fleet %q, not %q", inst.ID, fleet, inst.Fleet)
	}
	if current.State != nil {
		switch current.State.Name {
		case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated:
			return nil
		}
	}

	callCtx, cancel := p.call(ctx)
	defer cancel()
	_, err = client.TerminateInstances(callCtx, &ec2.TerminateInstancesInput{InstanceIds: []string{inst.ID}})
	if err != nil && errorCode(err) != "InvalidInstanceID.NotFound" {
		return fail(err)
	}
	return nil
}

// describe reads one instance; found is false when EC2 does not know it.
func (p *Provider) describe(ctx context.Context, client *ec2.Client, id string) (inst types.Instance, found bool, err error) {
	callCtx, cancel := p.call(ctx)
	defer cancel()
	out, err := client.DescribeInstances(callCtx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if errorCode(err) == "InvalidInstanceID.NotFound" {
			return types.Instance{}, false, nil
		}
		return types.Instance{}, false, err
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if awssdk.ToString(i.InstanceId) == id {
				return i, true, nil
			}
		}
	}
	return types.Instance{}, false, nil
}
