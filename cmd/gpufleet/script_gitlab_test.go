// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/glcomment/glfake"
)

// glFakes holds each script's fake, by its $WORK: a script's values are
// set up before it runs, and this fake is only for the scripts that start
// one.
var glFakes sync.Map

// glfake start|notes|requests|fail runs a fake GitLab API on loopback for
// a script.
//
//	glfake start               serve it at $CI_API_V4_URL, accepting only
//	                           $GITLAB_TOKEN as PRIVATE-TOKEN or, when that is
//	                           empty, $CI_JOB_TOKEN as JOB-TOKEN, with a
//	                           reviewer's note and a system note on 4242!7
//	glfake notes               print every note, each after a line "--- MR note ID"
//	glfake requests            print the requests made since the last time, one a line
//	glfake fail METHOD CODE…   answer the next requests of METHOD with CODEs first
func cmdGLFake(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: glfake start|notes|requests|fail METHOD CODE..."
	if neg || len(args) == 0 {
		ts.Fatalf("%s", usage)
	}
	work := ts.Getenv("WORK")
	if args[0] == "start" {
		header, token := "PRIVATE-TOKEN", ts.Getenv("GITLAB_TOKEN")
		if token == "" {
			header, token = "JOB-TOKEN", ts.Getenv("CI_JOB_TOKEN")
		}
		if token == "" {
			ts.Fatalf("glfake start: set GITLAB_TOKEN or CI_JOB_TOKEN first")
		}
		f := glfake.New(token)
		f.Tokens = map[string]string{header: token}
		f.NextID = 1001
		f.Notes = []*glfake.Note{
			{ID: 1000, Body: "LGTM, once the plan is green.", MR: "4242!7"},
			{ID: 1001, Body: "added 1 commit", System: true, MR: "4242!7"},
		}
		srv := httptest.NewServer(f)
		glFakes.Store(work, f)
		ts.Defer(func() {
			srv.Close()
			glFakes.Delete(work)
		})
		ts.Setenv("CI_API_V4_URL", srv.URL+"/api/v4")
		return
	}
	v, ok := glFakes.Load(work)
	if !ok {
		ts.Fatalf("glfake: run glfake start first")
	}
	f := v.(*glfake.Server)
	if args[0] == "requests" && len(args) == 1 {
		for _, r := range f.TakeCalls() {
			fmt.Fprintln(ts.Stdout(), r)
		}
		return
	}
	f.Lock()
	defer f.Unlock()
	switch {
	case args[0] == "notes" && len(args) == 1:
		for _, n := range f.Notes {
			fmt.Fprintf(ts.Stdout(), "--- %s note %d\n%s\n", n.MR, n.ID, n.Body)
		}
	case args[0] == "fail" && len(args) >= 3:
		for _, a := range args[2:] {
			code, err := strconv.Atoi(a)
			if err != nil {
				ts.Fatalf("glfake fail: %v", err)
			}
			f.FailNext[args[1]] = append(f.FailNext[args[1]], code)
		}
	default:
		ts.Fatalf("%s", usage)
	}
}
