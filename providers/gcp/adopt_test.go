// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
)

// TestAdoptRereadsStaleLabels: someone changes an instance's labels
// between Adopt's read and its setLabels. GCE refuses the stale
// fingerprint; Adopt reads the labels again and keeps the new ones beside
// its own, or, when the change made the instance another fleet's, refuses
// it, and that fleet's labels stay.
func TestAdoptRereadsStaleLabels(t *testing.T) {
	tests := []struct {
		name    string
		meddle  map[string]string
		refused bool
		want    map[string]string
	}{
		{"a label added meanwhile is kept", map[string]string{"owner": "ana"}, false,
			map[string]string{"owner": "ana", providers.TagFleet: "ml", providers.TagWorkload: "chat"}},
		{"another fleet took it meanwhile", map[string]string{providers.TagFleet: "web", providers.TagWorkload: "t4", providers.TagToken: "gf2-x"}, true,
			map[string]string{providers.TagFleet: "web", providers.TagWorkload: "t4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var world atomic.Pointer[sim.World]
			var target atomic.Value
			var setLabels atomic.Int32
			b := newBackend(t, sim.Config{}, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/setLabels") && setLabels.Add(1) == 1 {
						if err := world.Load().SetTags(target.Load().(string), tt.meddle); err != nil {
							t.Errorf("meddling: %v", err)
						}
					}
					next.ServeHTTP(w, r)
				})
			})
			world.Store(b.world)
			ctx := context.Background()
			name, err := b.foreign(ctx)
			if err != nil {
				t.Fatal(err)
			}
			found, err := b.provider.Unowned(ctx, providers.UnownedSelector{IDs: []string{name}})
			if err != nil || len(found) != 1 {
				t.Fatalf("Unowned: %v, %v", found, err)
			}
			inst, ok := b.world.ByName(Name, "projects/"+testProject+"/zones/"+testZone, name)
			if !ok {
				t.Fatalf("%s is not in the world", name)
			}
			target.Store(inst.ID)
			req := providers.CreateRequest{Fleet: "ml", Workload: "chat", Token: providers.AdoptedToken("ml", "chat", Name, name), Offer: found[0].Offer}
			_, err = b.provider.Adopt(ctx, found[0], req)
			switch {
			case tt.refused && !errors.Is(err, providers.ErrInvalid):
				t.Errorf("Adopt: %v, want a refusal", err)
			case !tt.refused && err != nil:
				t.Errorf("Adopt: %v", err)
			}
			if n := setLabels.Load(); n != 2 && !tt.refused {
				t.Errorf("%d setLabels calls, want 2: the refused one and the one after reading again", n)
			}
			vm, err := b.provider.get(ctx, testZone, name)
			if err != nil {
				t.Fatal(err)
			}
			got := maps.Clone(vm.GetLabels())
			delete(got, providers.TagToken)
			if !maps.Equal(got, tt.want) {
				t.Errorf("labels %v, want %v (token aside)", vm.GetLabels(), tt.want)
			}
		})
	}
}
