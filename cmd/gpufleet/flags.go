// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Every flag can also be set by an environment variable: GPUFLEET_ and the
// flag's name in capitals with _ for -, as --max-price-age is
// GPUFLEET_MAX_PRICE_AGE. A flag on the command line wins. Flags whose
// help already names their variable read it themselves; the others are
// bound here, uniformly, and their help says so.

// envBound marks, in a flag's annotations, the flags bound here.
const envBound = "gpufleet-env"

func envName(flag string) string {
	return "GPUFLEET_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// annotateEnv adds to the help of every flag of every command the variable
// that sets it, and marks those bindEnv binds.
func annotateEnv(cmd *cobra.Command) {
	mark := func(f *pflag.Flag) {
		if f.Name == "help" || f.Name == "version" || strings.Contains(f.Usage, "[GPUFLEET_") {
			return
		}
		name := envName(f.Name)
		f.Usage += " [" + name + "]"
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[envBound] = []string{name}
	}
	cmd.LocalNonPersistentFlags().VisitAll(mark)
	cmd.PersistentFlags().VisitAll(mark)
	for _, c := range cmd.Commands() {
		annotateEnv(c)
	}
}

// bindEnv sets, from the environment, the flags of the command about to
// run that the command line left alone.
func bindEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		names := f.Annotations[envBound]
		if err != nil || f.Changed || len(names) == 0 {
			return
		}
		v, ok := os.LookupEnv(names[0])
		if !ok || v == "" {
			return
		}
		values := []string{v}
		if strings.HasSuffix(f.Value.Type(), "Array") {
			values = splitList(v)
		}
		for _, value := range values {
			if serr := f.Value.Set(value); serr != nil {
				err = fmt.Errorf("%s=%q: %w", names[0], v, serr)
				return
			}
		}
		f.Changed = true
	})
	return err
}

// formatWords are the -o formats a command's flag help names.
var formatWords = regexp.MustCompile(`\b(text|json|markdown)\b`)

// registerCompletions completes the values of -o (the formats the command
// takes), --cloud and --fleet (the repository's fleets) on every command.
func registerCompletions(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("output"); f != nil && f.Value.Type() == "string" {
		formats := formatWords.FindAllString(f.Usage, -1)
		cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return formats, cobra.ShellCompDirectiveNoFileComp
		})
	}
	if cmd.Flags().Lookup("cloud") != nil {
		cmd.RegisterFlagCompletionFunc("cloud", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return catalog.Clouds, cobra.ShellCompDirectiveNoFileComp
		})
	}
	if cmd.Flags().Lookup("fleet") != nil {
		cmd.RegisterFlagCompletionFunc("fleet", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			repo := "."
			if f := c.Flags().Lookup("repo"); f != nil && f.Value.String() != "" {
				repo = f.Value.String()
			}
			r, err := schema.Load(repo)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, f := range r.Fleets {
				names = append(names, f.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, c := range cmd.Commands() {
		registerCompletions(c)
	}
}
