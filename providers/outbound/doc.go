// SPDX-License-Identifier: Apache-2.0

// Package outbound is how gpufleet calls other services over HTTP: the
// price APIs, GitHub and GitLab, notification receivers and the other
// replicas of serve. A client it makes bounds every attempt in time and
// sends a request only where it was configured to: a redirect to another
// origin (scheme, host and port) is refused before anything is sent, so a
// token in a header, a key in a query or a signed body never reaches a
// host nobody named. Plain http is refused beyond loopback unless
// GPUFLEET_ALLOW_HTTP=true.
//
// It sits in providers, the lowest layer that speaks to the outside world,
// so that every caller — the price loaders, reconcile's notifications and
// agent, cmd's commenters — imports it downward, while the planner and
// schema, which do no I/O, stay out of its reach.
package outbound
