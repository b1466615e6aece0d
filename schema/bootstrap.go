// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"cuelang.org/go/cue"

	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/redact"
)

// MaxBootstrap is, per cloud, the most a node's bootstrap may hold, as the
// cloud counts it: EC2 user data 16 KB before base64, Azure custom data
// 64 KB, a GCE metadata value 256 KB. Lambda documents no limit for its
// user data; gpufleet holds it to Azure's 64 KB, so a file that fits one
// cloud's launch is not refused by another's at launch time. OCI's
// instance metadata holds 32,000 bytes in all, user data in base64 among
// it: 16 KB before base64 leaves room for the SSH keys beside it.
var MaxBootstrap = map[string]int{
	catalog.AWS:    16 << 10,
	catalog.Azure:  64 << 10,
	catalog.GCP:    256 << 10,
	catalog.Lambda: 64 << 10,
	catalog.OCI:    16 << 10,
}

// SecretEnvPrefix is how a bootstrap's secrets are found in the
// environment: GPUFLEET_SECRET_<NAME>.
const SecretEnvPrefix = redact.SecretEnvPrefix

// BootstrapData is what a bootstrap file is rendered with, for one node.
type BootstrapData struct {
	Fleet, Workload, Cloud, Region, Zone, InstanceType, Market, Token string
}

// bootstrapFuncs are the template's functions; secret is replaced at
// render time.
var bootstrapFuncs = template.FuncMap{"secret": func(string) (string, error) { return "", nil }}

// MaxTokenLen is the longest create token a node's .Token can be (the
// planner's tokens are at most 34 characters), for the bound on what a
// bootstrap renders to.
const MaxTokenLen = 34

// maxNameLen is the longest fleet or workload name (nameRE).
const maxNameLen = 40

// BootstrapFor is the bootstrap a workload's nodes run on a cloud: the
// workload's own, or the cloud's launch default, or nil.
func (c *Config) BootstrapFor(w *Workload, cloud string) *Bootstrap {
	if w.Bootstrap != nil {
		return w.Bootstrap
	}
	return c.cloudBootstrap(cloud)
}

func (c *Config) cloudBootstrap(cloud string) *Bootstrap {
	switch cloud {
	case catalog.AWS:
		return c.Clouds.AWS.Launch.Bootstrap
	case catalog.Azure:
		return c.Clouds.Azure.Launch.Bootstrap
	case catalog.GCP:
		return c.Clouds.GCP.Launch.Bootstrap
	case catalog.Lambda:
		return c.Clouds.Lambda.Launch.Bootstrap
	case catalog.OCI:
		return c.Clouds.OCI.Launch.Bootstrap
	}
	return nil
}

// loadBootstrap reads a bootstrap's file through the repository's root — a
// regular file, inside the repository and outside .git, in UTF-8 — checks
// it is a template of the bootstrap language whose secrets are all
// declared, and that what it can render to fits every cloud it may go to,
// and fills its Source and Digest. v is the value holding the bootstrap,
// at its path there.
func (l *loader) loadBootstrap(b *Bootstrap, v cue.Value, at, base string, clouds []string) {
	field := base + "." + at + ".file"
	fail := func(format string, args ...any) {
		l.errs.add(valuePosition(v, at+".file"), field, format, args...)
	}
	inFile := func(offset int, format string, args ...any) {
		line, col := lineCol(b.Source, offset)
		l.errs.add(Position{File: b.File, Line: line, Column: col}, field, format, args...)
	}
	b.Pos = valuePosition(v, at)
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		fail("cannot open the repository: %v", unwrapPathError(err))
		return
	}
	defer root.Close()
	src, resolved, err := readFile(root, b.File)
	if err != nil {
		fail("%s: %v", b.File, err)
		return
	}
	l.noteRead(b.File, resolved, src)
	b.Source = src
	sum := sha256.Sum256(src)
	b.Digest = "sha256:" + hex.EncodeToString(sum[:])[:12]
	if !utf8.Valid(src) {
		line, col := firstInvalidUTF8(src)
		l.errs.add(Position{File: b.File, Line: line, Column: col}, field, "file is not valid UTF-8")
		return
	}
	tmpl, err := parseBootstrap(b.File, src)
	if err != nil {
		// The template package says "template: FILE:LINE: message".
		pos, msg := bootstrapPosition(b.File, strings.TrimPrefix(err.Error(), "template: "))
		l.errs.add(pos, field, "%s", msg)
		return
	}
	uses, problems := checkTemplate(tmpl)
	for _, p := range problems {
		inFile(p.offset(src), "%s", p.msg)
	}
	if len(problems) > 0 {
		return
	}
	for _, use := range uses {
		switch {
		case use.secret != "" && !slices.Contains(b.Secrets, use.secret):
			line, col := lineCol(src, int(use.pos))
			l.errs.add(Position{File: b.File, Line: line, Column: col}, base+"."+at+".secrets",
				"secret %q is not declared: add it to %s.secrets", use.secret, at)
		case use.field == "Token":
			// The node's own token makes the bootstrap differ per node.
			b.PerNode = true
		}
		if use.secret != "" && !slices.Contains(b.Used, use.secret) {
			b.Used = append(b.Used, use.secret)
		}
	}
	slices.Sort(b.Used)
	for _, cloud := range clouds {
		limit := MaxBootstrap[cloud]
		bound := renderedBound(tmpl.Tree.Root, l.fieldLen(cloud), secretLen)
		switch {
		case bound <= limit:
		case len(uses) == 0:
			fail("%s is %d bytes; %s takes at most %d bytes of %s", b.File, bound, cloud, limit, bootstrapKind(cloud))
		default:
			fail("%s renders to as many as %d bytes (its text, each field at its longest, the secrets set in the environment); %s takes at most %d bytes of %s",
				b.File, bound, cloud, limit, bootstrapKind(cloud))
		}
	}
}

// parseBootstrap parses a bootstrap file as a template.
func parseBootstrap(name string, src []byte) (*template.Template, error) {
	return template.New(name).Funcs(bootstrapFuncs).Option("missingkey=error").Parse(string(src))
}

// fieldLen is, for a cloud, the longest each field of a node's data can
// be: names at their limit, places and types at the longest the catalog
// has.
func (l *loader) fieldLen(cloud string) func(string) int {
	var region, zone, instanceType int
	for _, r := range l.cat.RegionsOf(cloud) {
		region = max(region, len(r.Name))
		for _, z := range r.Zones {
			zone = max(zone, len(z))
		}
	}
	for _, o := range l.cat.Offers {
		if o.Cloud == cloud {
			instanceType = max(instanceType, len(o.InstanceType))
		}
	}
	return func(field string) int {
		switch field {
		case "Fleet", "Workload":
			return maxNameLen
		case "Cloud":
			return len(cloud)
		case "Region":
			return region
		case "Zone":
			return zone
		case "InstanceType":
			return instanceType
		case "Market":
			return len("on-demand")
		case "Token":
			return MaxTokenLen
		}
		return 0
	}
}

// secretLen is a secret's length as the environment has it, 0 when it is
// not set there (as in CI, where plans are made without secrets).
func secretLen(name string) int { return len(os.Getenv(SecretEnvPrefix + name)) }

func bootstrapKind(cloud string) string {
	switch cloud {
	case catalog.AWS:
		return "user data"
	case catalog.Azure:
		return "custom data"
	}
	return "metadata value"
}

// bootstrapPosition reads "FILE:LINE: message" back into a position and
// the message.
func bootstrapPosition(file, msg string) (Position, string) {
	pos := Position{File: file}
	rest, ok := strings.CutPrefix(msg, file+":")
	if !ok {
		return pos, msg
	}
	n, text, _ := strings.Cut(rest, ":")
	line, err := strconv.Atoi(n)
	if err != nil {
		return pos, msg
	}
	pos.Line = line
	return pos, strings.TrimSpace(text)
}

func lineCol(src []byte, offset int) (line, col int) {
	line, col = 1, 1
	for _, c := range src[:min(offset, len(src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// errTooLarge is what a render that outgrows its cloud's limit stops on.
var errTooLarge = errors.New("too large")

// limitedBuffer is a buffer that refuses to grow past limit bytes.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

// UnsetSecrets lists the secrets the bootstrap uses that lookup gives no
// usable value for: not set, or too short to be kept out of what gpufleet
// writes. A launch would fail on each of them, so a run checks them before
// it launches anything. A secret declared and never used is not needed.
func (b *Bootstrap) UnsetSecrets(lookup func(name string) (string, bool)) []string {
	var out []string
	for _, name := range b.Used {
		if v, ok := lookup(name); !ok || len(v) < redact.MinLen {
			out = append(out, name)
		}
	}
	return out
}

// Render renders a bootstrap for one node, with each secret it declares
// read by lookup (the environment, GPUFLEET_SECRET_<NAME>, in gpufleet).
// The result holds the secrets' values, so it goes to the cloud only. An
// error names the file, the position and what is wrong — a secret not
// declared, not set or too short, or a result over the cloud's limit —
// and never holds a value: a secret's, or what the template engine would
// quote.
func (b *Bootstrap) Render(data BootstrapData, lookup func(name string) (string, bool)) ([]byte, error) {
	tmpl, err := parseBootstrap(b.File, b.Source)
	if err != nil {
		return nil, fmt.Errorf("bootstrap %s does not parse", b.File)
	}
	// Load checked the file; a Bootstrap made otherwise is checked here.
	if _, problems := checkTemplate(tmpl); len(problems) > 0 {
		line, col := lineCol(b.Source, problems[0].offset(b.Source))
		return nil, fmt.Errorf("%s:%d:%d: %s", b.File, line, col, problems[0].msg)
	}
	var failed error
	tmpl.Funcs(template.FuncMap{"secret": func(name string) (string, error) {
		v, ok := lookup(name)
		switch {
		case !slices.Contains(b.Secrets, name):
			failed = fmt.Errorf("secret %q is not declared", name)
		case !ok:
			failed = fmt.Errorf("secret %s is not set: export %s%s", name, SecretEnvPrefix, name)
		case len(v) < redact.MinLen:
			failed = fmt.Errorf("secret %s is %d bytes: gpufleet keeps secrets out of everything it writes by their value, which takes at least %d bytes", name, len(v), redact.MinLen)
		default:
			return v, nil
		}
		return "", failed
	}})
	limit := MaxBootstrap[data.Cloud]
	if limit == 0 {
		limit = MaxFileSize
	}
	out := &limitedBuffer{limit: limit}
	if err := tmpl.Execute(out, data); err != nil {
		pos, _ := bootstrapPosition(b.File, strings.TrimPrefix(err.Error(), "template: "))
		switch {
		case failed != nil:
			return nil, fmt.Errorf("%s: %w", pos, failed)
		case errors.Is(err, errTooLarge):
			return nil, fmt.Errorf("bootstrap %s renders to more than %d bytes; %s takes at most %d bytes of %s", b.File, limit, data.Cloud, limit, bootstrapKind(data.Cloud))
		}
		// The engine's own message may quote what it rendered.
		return nil, fmt.Errorf("%s: the bootstrap cannot be rendered", pos)
	}
	return out.Bytes(), nil
}
