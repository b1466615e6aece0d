// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"maps"
)

// ReplaceTags sets an instance's tags to exactly the given set, as an ARM
// PUT does: tags left out of the request are removed, unlike SetTags.
func (w *World) ReplaceTags(id string, tags map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	inst, ok := w.instances[id]
	if !ok || !w.visible(inst, w.clock.Now()) {
		return &Error{Kind: KindNotFound, Message: fmt.Sprintf("instance %s not found", id)}
	}
	inst.Tags = maps.Clone(tags)
	if inst.Tags == nil {
		inst.Tags = map[string]string{}
	}
	w.changed()
	return nil
}
