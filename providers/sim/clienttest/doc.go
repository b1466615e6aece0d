// SPDX-License-Identifier: Apache-2.0

// Package clienttest is for the tests that drive the emulator with clients
// gpufleet did not write (the AWS CLI, the Azure SDK for Python, gcloud,
// moto): a test whose client is missing skips, naming it, unless the
// environment says the client must be there, as CI does, where a skip
// would hide that the client was never run.
package clienttest
