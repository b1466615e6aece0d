// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/schema"
)

func TestMain(m *testing.M) {
	// The example's nodes need its bootstrap secrets to launch; the demo
	// gives them placeholders, and so do the tests.
	examples.SetPlaceholderSecrets(schema.SecretEnvPrefix)
	testscript.Main(removingBuilds{m}, map[string]func(){
		"gpufleet": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs every user-visible behaviour of the command in
// testdata/script. Set GPUFLEET_UPDATE_GOLDEN=1 to rewrite the files that
// scripts compare output against.
func TestScripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("GPUFLEET_UPDATE_GOLDEN") != "",
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", filepath.Join(root, "examples"))
			// The scripts' repositories take tens of pushes; each would
			// start a `git gc --auto` that finds nothing to do.
			env.Setenv("GIT_CONFIG_COUNT", "1")
			env.Setenv("GIT_CONFIG_KEY_0", "receive.autogc")
			env.Setenv("GIT_CONFIG_VALUE_0", "false")
			env.Setenv("SPECS", filepath.Join(root, "testdata", "specs"))
			env.Values[fakeGitHubKey{}] = new(fakeGitHub)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitCode,
			"freeport": cmdFreePort,
			"httpget":  cmdHTTPGet,
			"httppost": cmdHTTPPost,
			"term":     cmdTerm,
			"ghfake":   cmdGHFake,
			"glfake":   cmdGLFake,
			"schemaok": cmdSchemaOK,
			"maxlines": cmdMaxLines,
		},
	})
}
