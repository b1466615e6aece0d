// SPDX-License-Identifier: Apache-2.0

// Package fake is an in-memory providers.Provider for fast unit tests of the
// reconciler's decisions: it sells a fixed set of offers, keeps the
// instances it launched, records every call in order, and fails the calls a
// test asks it to. It follows the provider contracts (idempotent creates,
// ownership, already-gone deletes) but knows nothing of any cloud's API, so
// it never replaces the emulator tests (providers/sim, reconcile's e2e and
// chaos tests), which check what the real providers do.
package fake
