// SPDX-License-Identifier: Apache-2.0

// Package simtls makes the certificates the emulator serves https with: a
// CA of its own and a server certificate it signs for the loopback names,
// written as PEM files so that every client can be told to trust the CA
// through its standard setting (AWS_CA_BUNDLE, REQUESTS_CA_BUNDLE,
// gcloud's core/custom_ca_certs_file, SSL_CERT_FILE for Go).
package simtls
