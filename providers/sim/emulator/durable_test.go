// SPDX-License-Identifier: Apache-2.0

package emulator

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// startSaving starts an emulator whose autosave never comes, so that only
// the saves requests wait for reach the state file.
func startSaving(t testing.TB, state string) *Emulator {
	t.Helper()
	world, err := sim.New(sim.Config{StatePath: state, Seed: 3, Capacity: 1 << 20, Quota: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := Start(world, Options{SaveEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close(context.Background()) })
	return emu
}

func runInstance(ctx context.Context, client *ec2.Client, token string) (*ec2.RunInstancesOutput, error) {
	return client.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeG4dnXlarge,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String(token),
		Placement: &types.Placement{AvailabilityZone: aws.String("us-east-1a")},
	})
}

// A create is in the state file by the time it is answered, and reads do
// not write the file.
func TestAnswersWaitForTheStateFile(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "state.json")
	emu := startSaving(t, state)
	client := ec2Client(emu)
	run, err := runInstance(ctx, client, "saved")
	if err != nil {
		t.Fatal(err)
	}
	saved, err := sim.New(sim.Config{StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := saved.Get(*run.Instances[0].InstanceId); !ok {
		t.Fatal("the answered create is not in the state file")
	}
	before := emu.World.Saves()
	for range 5 {
		if _, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := emu.World.Saves() - before; got != 0 {
		t.Errorf("5 reads saved the world %d times, want none", got)
	}
}

// BenchmarkConcurrentCreates measures what concurrent RunInstances cost in
// saves: one client pays a save a create, and clients whose creates finish
// while a save runs share the next one.
//
//	go test ./providers/sim/emulator -run '^$' -bench ConcurrentCreates -benchtime 2000x
func BenchmarkConcurrentCreates(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			ctx := context.Background()
			emu := startSaving(b, filepath.Join(b.TempDir(), "state.json"))
			client := ec2Client(emu)
			before := emu.World.Saves()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range clients {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if _, err := runInstance(ctx, client, fmt.Sprint("bench-", i)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(emu.World.Saves()-before)/float64(b.N), "saves/create")
		})
	}
}
