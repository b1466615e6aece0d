package main

import (
	"os"
	"strings"
	"testing"
)

// The image build leaves out what gpufleet writes in a checkout (its
// scratch directories, built binaries) and labels the image with what it
// is, its version, revision, source and licence, as OCI annotations.
func TestTheImageBuildSaysWhatItIs(t *testing.T) {
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ignore), "\n")
	for _, want := range []string{".git", ".gpufleet/", "bin/", "dist/"} {
		found := false
		for _, l := range lines {
			found = found || strings.TrimSpace(l) == want
		}
		if !found {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"title", "version=\"${VERSION}\"", "revision=\"${REVISION}\"", "source", "licenses=\"Apache-2.0\""} {
		if !strings.Contains(string(dockerfile), "org.opencontainers.image."+label) {
			t.Errorf("the Dockerfile has no org.opencontainers.image.%s label", label)
		}
	}
	if !strings.Contains(string(dockerfile), "USER nonroot") {
		t.Error("the image does not run as a non-root user")
	}
	if licence, err := os.ReadFile("../../LICENSE"); err != nil || !strings.Contains(string(licence), "Apache License\n                           Version 2.0") {
		t.Errorf("LICENSE is not the Apache License 2.0 (%v)", err)
	}
}
