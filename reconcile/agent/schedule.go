// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// schedule draws the pause before each scheduled run: the interval,
// stretched or shrunk by up to the jitter share. Its source is seeded from
// the repository, so an agent's schedule can be replayed in a test or a
// postmortem, and repositories configured together still drift apart.
type schedule struct {
	interval time.Duration
	jitter   float64
	rng      *rand.Rand
}

func newSchedule(interval time.Duration, jitter float64, repo string) *schedule {
	h := fnv.New64a()
	h.Write([]byte(repo))
	seed := h.Sum64()
	return &schedule{interval: interval, jitter: jitter, rng: rand.New(rand.NewPCG(seed, seed>>1|1))}
}

// next is the pause before the next scheduled run, within
// interval × (1 ± jitter). Only the worker's goroutine calls it.
func (s *schedule) next() time.Duration {
	if s.jitter <= 0 {
		return s.interval
	}
	spread := 1 + s.jitter*(2*s.rng.Float64()-1)
	return time.Duration(float64(s.interval) * spread)
}
