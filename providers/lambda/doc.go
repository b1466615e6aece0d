// SPDX-License-Identifier: Apache-2.0

// Package lambda is gpufleet's Lambda Cloud provider. It launches, lists
// and terminates GPU instances through Lambda Cloud's REST API (v1), with
// the API key from LAMBDA_API_KEY, reads which regions have room for each
// instance type, and classifies the API's errors into providers.Error.
// Requests are retried on 429 and 5xx with a backoff that honours
// Retry-After, launches on 429 only (see once).
//
// Lambda Cloud has no tags, no idempotency token, no zones and no spot
// market, and gpufleet makes up for each:
//
//   - Ownership: a node's name is NodeName(fleet, workload, token), e.g.
//     gf.research.train.0123456789abcdef01234567-3, from which List reads
//     its fleet, workload and full token back. An instance whose name does
//     not read so is not gpufleet's: it is never listed, and Delete refuses
//     it. A name has at most 64 characters, so fleets and workloads whose
//     names are too long together cannot run here; NodeName says by how
//     much.
//   - Idempotency: Create lists the account and returns the instance of
//     the create's name that is not terminating, if there is one, and
//     only then launches one; if the list fails, it launches nothing. A
//     repeat, even after a crash, returns the first instance. That holds
//     because gpufleet runs under the repository's lock, one writer per
//     account: two writers without it could both find no instance and
//     both launch. A launch is never retried once it may have reached the
//     API (a 5xx, a lost connection), for a second attempt could launch a
//     second instance; the next create finds the first by name.
//   - Zones and markets: a region is its own zone, and every offer is
//     on-demand; a spot offer is refused as invalid.
//   - Capacity: Lambda publishes no quotas, only which regions have room
//     for each type now; an offer without room has Available 0.
//
// A node boots with its bootstrap as user_data, which goes to the API and
// nowhere else. The API does not return user data and the name has no
// room for the bootstrap's digest, so a node's bootstrap is not known
// (planner.BootstrapUnknown): a node is never replaced for its bootstrap,
// and a changed bootstrap reaches only the nodes launched after it. Launches name the configured SSH key, which the
// account must have: an unset or unknown key fails them as invalid,
// naming clouds.lambda.launch.sshKeyName.
package lambda
