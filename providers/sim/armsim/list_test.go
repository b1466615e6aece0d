// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Over a thousand VMs, created through the SDK, come back through its
// pagers exactly once each, over several pages.
func TestListPaging(t *testing.T) {
	const inGroup, elsewhere, pageSize = 1001, 7, 100
	f := newFront(t, frontConfig{
		world:   sim.Config{Capacity: 2000},
		options: Options{PageSize: pageSize},
	})
	f.createGroup(t, "other-rg", "eastus")
	create := func(rg, name, zone string) error {
		poller, err := f.vms.BeginCreateOrUpdate(context.Background(), rg, name, vmRequest("eastus", t4, inZone(zone)), nil)
		if err != nil {
			return err
		}
		_, err = poller.PollUntilDone(context.Background(), pollFast)
		return err
	}
	jobs := make(chan int)
	errs := make(chan error, inGroup+elsewhere)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				rg, name := testRG, fmt.Sprintf("node-%04d", i)
				if i >= inGroup {
					rg = "other-rg"
				}
				if err := create(rg, name, fmt.Sprint(1+i%3)); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
				}
			}
		})
	}
	for i := range inGroup + elsewhere {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	type page struct {
		names []string
		err   error
	}
	pagers := []struct {
		name      string
		pages     func(func(page) bool)
		wantVMs   int
		wantPages int
	}{
		{"resource group", func(yield func(page) bool) {
			pager := f.vms.NewListPager(testRG, nil)
			for pager.More() {
				resp, err := pager.NextPage(context.Background())
				if !yield(page{names(resp.Value), err}) {
					return
				}
			}
		}, inGroup, 11},
		{"subscription", func(yield func(page) bool) {
			pager := f.vms.NewListAllPager(nil)
			for pager.More() {
				resp, err := pager.NextPage(context.Background())
				if !yield(page{names(resp.Value), err}) {
					return
				}
			}
		}, inGroup + elsewhere, 11},
		{"resource group with instance views", func(yield func(page) bool) {
			pager := f.vms.NewListPager(testRG, &armcompute.VirtualMachinesClientListOptions{Expand: to.Ptr(armcompute.ExpandTypeForListVMsInstanceView)})
			for pager.More() {
				resp, err := pager.NextPage(context.Background())
				if err == nil {
					for _, vm := range resp.Value {
						if statuses(*vm)["PowerState"] != "running" {
							err = fmt.Errorf("%s has no running PowerState: %v", deref(vm.Name), statuses(*vm))
						}
					}
				}
				if !yield(page{names(resp.Value), err}) {
					return
				}
			}
		}, inGroup, 11},
	}
	for _, p := range pagers {
		t.Run(p.name, func(t *testing.T) {
			seen := map[string]bool{}
			pages := 0
			for pg := range p.pages {
				if pg.err != nil {
					t.Fatal(pg.err)
				}
				pages++
				if len(pg.names) > pageSize {
					t.Fatalf("page %d holds %d VMs, more than %d", pages, len(pg.names), pageSize)
				}
				for _, n := range pg.names {
					if seen[n] {
						t.Fatalf("%s listed twice", n)
					}
					seen[n] = true
				}
			}
			if len(seen) != p.wantVMs || pages != p.wantPages {
				t.Fatalf("%d VMs over %d pages, want %d over %d", len(seen), pages, p.wantVMs, p.wantPages)
			}
		})
	}
}

func names(vms []*armcompute.VirtualMachine) []string {
	out := make([]string, len(vms))
	for i, vm := range vms {
		out[i] = deref(vm.Name)
	}
	return out
}

// The skip token survives changes between pages: nothing listed twice,
// nothing that was there and stayed is skipped.
func TestListStableAcrossChanges(t *testing.T) {
	f := newFront(t, frontConfig{options: Options{PageSize: 2}})
	for _, n := range []string{"a", "b", "c", "d"} {
		f.mustCreate(t, n, vmRequest("eastus", t4, inZone("1")))
	}
	pager := f.vms.NewListPager(testRG, nil)
	first, err := pager.NextPage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Between pages: a listed VM and an unlisted one go, a new one comes.
	for _, n := range []string{"a", "c"} {
		f.delete(t, n)
	}
	f.mustCreate(t, "e", vmRequest("eastus", t4, inZone("1")))
	got := names(first.Value)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, names(page.Value)...)
	}
	if fmt.Sprint(got) != "[a b d e]" {
		t.Fatalf("listed %v, want [a b d e]", got)
	}
}
