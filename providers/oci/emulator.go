// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/oracle/oci-go-sdk/v65/common"
)

// The emulator's fake tenancy and user. An OCID of the form OCI uses, so
// that what parses one reads these too, and marked as no tenancy's.
const (
	emulatorTenancy = "ocid1.tenancy.oc1..gpufleetemulator"
	emulatorUser    = "ocid1.user.oc1..gpufleetemulator"
)

// emulatorRegion is the region of the emulator's configuration; each
// client is set to its own region all the same.
const emulatorRegion = "us-ashburn-1"

// EmulatorConfigProvider is a configuration provider for the emulator,
// which takes any well-formed signature: a fake tenancy and user and a
// throwaway RSA-2048 key made for this process, so that no real
// credentials are needed, or sent, to reach it.
func EmulatorConfigProvider() (common.ConfigurationProvider, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("oci: generating the emulator's signing key, %w", err)
	}
	fingerprint, err := keyFingerprint(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	block := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return common.NewRawConfigurationProvider(emulatorTenancy, emulatorUser, emulatorRegion, fingerprint, string(block), nil), nil
}

// keyFingerprint is OCI's fingerprint of an API signing key, which keyIds
// name it by: the MD5 digest of its public half in DER, as hex pairs
// joined by colons.
func keyFingerprint(public *rsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(public)
	if err != nil {
		return "", fmt.Errorf("oci: encoding a public key, %w", err)
	}
	sum := md5.Sum(der)
	pairs := make([]string, len(sum))
	for i, b := range sum {
		pairs[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(pairs, ":"), nil
}
