// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema"
)

func TestNodeName(t *testing.T) {
	token := planner.Token("research", "train", testOffer, "rev", 3)
	name, err := NodeName("research", "train", token)
	if err != nil {
		t.Fatal(err)
	}
	if want := "gf.research.train." + strings.TrimPrefix(token, "gf2-"); name != want {
		t.Fatalf("NodeName is %q, want %q", name, want)
	}
	fleet, workload, back, ok := ParseNodeName(name)
	if !ok || fleet != "research" || workload != "train" || back != token {
		t.Fatalf("%s reads back as %q %q %q (%v)", name, fleet, workload, back, ok)
	}
	// Each token planner.Token makes is one TokenSlot reads.
	for _, slot := range []int{0, 9, 10, 12345} {
		token := planner.Token("f", "w", testOffer, "rev", slot)
		name, err := NodeName("f", "w", token)
		if err != nil {
			t.Fatalf("slot %d: %v", slot, err)
		}
		if _, _, back, ok := ParseNodeName(name); !ok || back != token {
			t.Errorf("slot %d: %s reads back as %q (%v)", slot, name, back, ok)
		}
		if _, got, ok := planner.TokenSlot(token); !ok || got != slot {
			t.Errorf("slot %d: the planner reads slot %d (%v)", slot, got, ok)
		}
	}
}

func TestNodeNameLimit(t *testing.T) {
	token := planner.Token("f", "w", testOffer, "rev", 7)
	// gf. . . and the 26 characters of the token's hex and slot: 31, so
	// fleet and workload share 33.
	fits, err := NodeName(strings.Repeat("f", 16), strings.Repeat("w", 17), token)
	if err != nil || len(fits) != MaxNameLength {
		t.Fatalf("a name of exactly %d: %q, %v", MaxNameLength, fits, err)
	}
	_, err = NodeName(strings.Repeat("f", 17), strings.Repeat("w", 17), token)
	if err == nil || !strings.Contains(err.Error(), "by 1") {
		t.Fatalf("a name of %d: %v, want a refusal saying by how much", MaxNameLength+1, err)
	}
}

func TestNodeNameRefuses(t *testing.T) {
	good := planner.Token("f", "w", testOffer, "rev", 0)
	for _, c := range []struct{ name, fleet, workload, token string }{
		{"no fleet", "", "w", good},
		{"no workload", "f", "", good},
		{"a dot in the fleet", "f.g", "w", good},
		{"a dot in the workload", "f", "w.x", good},
		{"an older token", "f", "w", "gf-0123456789abcdef"},
		{"a slot with a leading zero", "f", "w", good[:len(good)-1] + "01"},
		{"upper-case hex", "f", "w", strings.ToUpper(good[:28]) + good[28:]},
		{"no slot", "f", "w", good[:len(good)-2]},
	} {
		if name, err := NodeName(c.fleet, c.workload, c.token); err == nil {
			t.Errorf("%s: NodeName gave %q", c.name, name)
		}
	}
}

func TestForeignNames(t *testing.T) {
	good, _ := NodeName("f", "w", planner.Token("f", "w", testOffer, "rev", 0))
	for _, name := range []string{
		"", "notebook", "gf.f.w", "gf.f.w.x.y", "gf..w." + good[len("gf.f.w."):], "gf.f.w.0123-1",
		"gf-f-w-0123456789ab-0", good + "x", strings.ToUpper(good), "gf.f.w." + strings.Repeat("a", 24) + "-" + strings.Repeat("1", 40),
	} {
		if f, w, token, ok := ParseNodeName(name); ok {
			t.Errorf("%q reads as a node of %s/%s with token %s", name, f, w, token)
		}
	}
}

// The schema refuses at validate exactly the workloads whose nodes NodeName
// could not name, with a token of the largest slot it checks for: the
// two count the name apart, and must agree.
func TestTheSchemaRefusesTheNamesNodeNameCannotGive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	slot := 1
	for range schema.LambdaSlotDigits - 1 {
		slot *= 10
	}
	slot = slot*10 - 1 // the largest of LambdaSlotDigits digits
	name := func(n int) string {
		b := []byte(strings.Repeat("a", n))
		for i := 1; i < n; i++ {
			if r.IntN(5) == 0 && b[i-1] != '-' && i < n-1 {
				b[i] = '-'
			}
		}
		return string(b)
	}
	fits, over := 0, 0
	for range 2000 {
		fleet, workload := name(1+r.IntN(40)), name(1+r.IntN(40))
		_, err := NodeName(fleet, workload, planner.Token(fleet, workload, testOffer, "rev", slot))
		refused := schema.LambdaNameLength(fleet, workload) > schema.MaxLambdaName
		if refused != (err != nil) {
			t.Fatalf("fleet %q, workload %q: the schema refuses them %v, NodeName says %v", fleet, workload, refused, err)
		}
		if refused {
			over++
		} else {
			fits++
		}
	}
	if fits < 100 || over < 100 {
		t.Fatalf("%d names fit and %d do not: too few of one to compare", fits, over)
	}
	if schema.MaxLambdaName != MaxNameLength {
		t.Fatalf("the schema checks names against %d characters, the provider against %d", schema.MaxLambdaName, MaxNameLength)
	}
}
