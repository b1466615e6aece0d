// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/redact"
)

// exitCode is an error that asks Main for a particular exit status after
// the command has already told the user what happened.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// app holds what every command shares.
type app struct {
	// stdout and stderr mask secrets on their way out.
	stdout, stderr io.Writer
	// secrets are the values no output may hold: the environment's
	// secrets and credentials, and what commands read as they run.
	secrets   *redact.Set
	logFormat string
	logLevel  string
	log       *slog.Logger
	// stoppedOn are the spec errors a command stopped on, for -o json
	// to report.
	stoppedOn schema.Errors
}

// Main runs the gpufleet command line and returns its exit status: 0 on
// success, 1 on an error, and what a command asks for otherwise (plan
// --detailed-exitcode returns 2 when there are changes, refused or
// deferred ones included; reconcile 2 when it finished short of the
// specs, which a run rolling a change under a disruption budget does until
// its last deletion is made, and 3 when the lock is held).
func Main(args []string, stdout, stderr io.Writer) int {
	// The first interrupt asks the running command to wind down cleanly;
	// a second one kills the process as usual.
	ctx, stop := interruptible()
	defer stop()
	return run(ctx, args, stdout, stderr)
}

// interruptible is a context the first SIGINT or SIGTERM cancels. The
// signals go back to the system before anything sees the cancellation, so
// that a second one kills the process however soon it follows:
// signal.NotifyContext keeps catching them until its stop, swallowing it.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-signals:
			signal.Stop(signals)
			cancel(fmt.Errorf("%v signal received", s))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel(nil)
	}
}

// run is Main with the context commands stop on, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	secrets := redact.FromEnv()
	out, errOut := secrets.Writer(stdout), secrets.Writer(stderr)
	defer errOut.Flush()
	defer out.Flush()
	return runMasked(ctx, &app{stdout: out, stderr: errOut, secrets: secrets}, args)
}

func runMasked(ctx context.Context, a *app, args []string) int {
	stderr := a.stderr
	root := a.rootCommand()
	root.SetArgs(terraformFlags(args))
	cmd, err := root.ExecuteContextC(ctx)
	// A bare exit status follows output that already said why, unless
	// what it said were spec errors, on stderr.
	var bare exitCode
	if err != nil && wantsJSON(cmd) && (len(a.stoppedOn) > 0 || !errors.As(err, &bare)) {
		a.writeJSONError(err)
	}
	var code exitCode
	var coded interface{ ExitCode() int }
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &coded):
		fmt.Fprintf(stderr, "gpufleet: %v\n", err)
		return coded.ExitCode()
	default:
		fmt.Fprintf(stderr, "gpufleet: %v\n", err)
		return 1
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "gpufleet",
		Short: "Declarative GitOps for GPU fleets across AWS, Azure, GCP and GPU clouds",
		Long: `gpufleet keeps GPU fleets described in a Git repository of CUE specs
running at the lowest cost across AWS, Azure, GCP and Lambda Cloud, and reports what runs
where back to the repository.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			return a.setupLogging()
		},
		Version: buildVersion(),
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", envOr("GPUFLEET_LOG_FORMAT", "text"), "log format: text or json [GPUFLEET_LOG_FORMAT]")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", envOr("GPUFLEET_LOG_LEVEL", "info"), "log level: debug, info, warn or error [GPUFLEET_LOG_LEVEL]")
	root.AddCommand(
		a.validateCommand(),
		a.planCommand(),
		a.commentCommand(),
		a.reconcileCommand(),
		a.unlockCommand(),
		a.capacityCommand(),
		a.serveCommand(),
		a.applyCommand(),
		a.demoCommand(),
		a.schemaCommand(),
		a.simCommand(),
		a.catalogCommand(),
		a.backtestCommand(),
		a.versionCommand(),
		a.statusCommand(),
		a.checkCommand(),
		a.driftCommand(),
		a.adoptCommand(),
	)
	addExamples(root)
	annotateEnv(root)
	registerCompletions(root)
	return root
}

func (a *app) setupLogging() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return fmt.Errorf("--log-format must be text or json, not %q", a.logFormat)
	}
	return nil
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return fallback
}

// outputFormat checks an -o flag against the formats a command supports.
func outputFormat(value string, allowed ...string) error {
	for _, f := range allowed {
		if value == f {
			return nil
		}
	}
	return fmt.Errorf("-o must be one of %v, not %q", allowed, value)
}

// terraformFlags spells the long flags Terraform users write with one dash
// (plan -out FILE, -detailed-exitcode) with two, which the flag parser
// would otherwise read as clusters of one-letter flags (-o ut).
func terraformFlags(args []string) []string {
	out := slices.Clone(args)
	for i, arg := range out {
		if arg == "--" {
			return out
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "-"), "=")
		if strings.HasPrefix(arg, "-") && !strings.HasPrefix(arg, "--") && slices.Contains(oneDashFlags, name) {
			out[i] = "-" + arg
		}
	}
	return out
}

// oneDashFlags are the long flags also spelt with one dash, as Terraform
// spells them.
var oneDashFlags = []string{"out", "detailed-exitcode"}

// wantsJSON is whether a command was asked for JSON output.
func wantsJSON(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("output")
	return f != nil && f.Value.String() == "json"
}

// jsonErrorDetail is what a command asked for -o json prints on stdout when
// it fails, so a machine reading stdout gets an answer it can parse: the
// message, and the spec errors with their positions when those stopped it.
type jsonErrorDetail struct {
	Message    string        `json:"message"`
	SpecErrors schema.Errors `json:"specErrors,omitempty"`
}

func (a *app) writeJSONError(err error) {
	detail := jsonErrorDetail{Message: err.Error()}
	if len(a.stoppedOn) > 0 {
		detail.SpecErrors = a.stoppedOn
		detail.Message = fmt.Sprintf("the specs have %d errors", len(a.stoppedOn))
		if len(a.stoppedOn) == 1 {
			detail.Message = "the specs have an error"
		}
	}
	if werr := a.writeOutput("error", jsonErrorBody{Error: detail}); werr != nil {
		fmt.Fprintf(a.stderr, "gpufleet: %v\n", werr)
	}
}
