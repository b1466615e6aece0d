// SPDX-License-Identifier: Apache-2.0

// Command gpufleet reconciles GPU fleets across AWS, Azure, GCP and Lambda
// Cloud from a Git repository of CUE specs: validate specs, plan
// placements, apply them, and report status back to the repository. Each
// subcommand lives in its own file; all output goes through the writers
// given to Main so tests can read it.
package main
