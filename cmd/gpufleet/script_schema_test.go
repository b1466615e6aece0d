// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// cmdSchemaOK checks a JSON file against the schema `gpufleet schema json
// KIND` publishes, with an independent validator:
//
//	schemaok KIND FILE
//
// FILE may be stdout, the last command's.
func cmdSchemaOK(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: schemaok KIND FILE")
	}
	kind, file := args[0], args[1]
	var schemaJSON bytes.Buffer
	if code := run(context.Background(), []string{"schema", "json", kind}, &schemaJSON, &bytes.Buffer{}); code != 0 {
		ts.Fatalf("gpufleet schema json %s: exit %d", kind, code)
	}
	doc, err := jsonschema.UnmarshalJSON(&schemaJSON)
	ts.Check(err)
	c := jsonschema.NewCompiler()
	url := "https://gpufleet.dev/schema/" + kind + ".json"
	ts.Check(c.AddResource(url, doc))
	sch, err := c.Compile(url)
	ts.Check(err)
	var data []byte
	if file == "stdout" {
		data = []byte(ts.ReadFile("stdout"))
	} else {
		data, err = os.ReadFile(ts.MkAbs(file))
		ts.Check(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		if !neg {
			ts.Fatalf("%s is not JSON: %v", file, err)
		}
		return
	}
	err = sch.Validate(v)
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s does not match the %s schema: %v", file, kind, err)
	case err == nil && neg:
		ts.Fatalf("%s matches the %s schema", file, kind)
	}
}
