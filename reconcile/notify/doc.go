// SPDX-License-Identifier: Apache-2.0

// Package notify tells people and systems what a reconcile did, as Flux's
// notification controller does: a run that changed something, failed or
// did not converge goes to Slack (an incoming webhook) and to any HTTP
// endpoint (JSON signed with HMAC-SHA256), as gpufleet.cue asks. The URLs
// and the key come from the environment. An event is sent once, however
// often a failing run repeats it, and each destination is rate limited.
package notify
