// SPDX-License-Identifier: Apache-2.0

package schema

import "time"

// Repo is a loaded fleet repository: its configuration and fleets, with the
// schema's defaults applied.
type Repo struct {
	// Dir is the directory the repository was loaded from.
	Dir    string
	Config Config
	// Fleets sorted by name.
	Fleets []Fleet
	// Files are the spec files read, repository-relative and sorted.
	Files []string
	// Read is every file the load read — the specs and the bootstrap
	// files — sorted by name: what a plan is made of, so what a saved
	// plan binds and what must be committed for a run to apply it.
	Read []ReadFile
}

// ReadFile is a file a load read, with what it held.
type ReadFile struct {
	// Name is the file's repository-relative path, as the specs or the
	// directory listing name it.
	Name string `json:"name"`
	// Resolved is the path of the file read, when Name is or passes
	// through a symlink; "" when it is Name.
	Resolved string `json:"resolved,omitempty"`
	// SHA256 is the hex SHA-256 of its contents.
	SHA256 string `json:"sha256"`
}

// Path is the path of the file that was read.
func (f ReadFile) Path() string {
	if f.Resolved != "" {
		return f.Resolved
	}
	return f.Name
}

// Fleet looks a fleet up by name.
func (r *Repo) Fleet(name string) (*Fleet, bool) {
	for i := range r.Fleets {
		if r.Fleets[i].Name == name {
			return &r.Fleets[i], true
		}
	}
	return nil, false
}

// Config is gpufleet.cue.
type Config struct {
	Clouds        Clouds         `json:"clouds"`
	Status        StatusConfig   `json:"status"`
	Defaults      Defaults       `json:"defaults"`
	Reservations  []Reservation  `json:"reservations"`
	Notifications *Notifications `json:"notifications,omitempty"`
	// Pricing is what the account pays where it is not the list price.
	Pricing Pricing `json:"pricing"`
}

// Notifications say who is told of runs; the URLs and the signing key are
// read from the environment variables named, never from the repository.
type Notifications struct {
	Slack   *SlackNotification   `json:"slack,omitempty"`
	Webhook *WebhookNotification `json:"webhook,omitempty"`
	// On lists what is told: "changed", "failed", "not-converged", "drifted".
	On []string `json:"on"`
}

// SlackNotification is a Slack incoming webhook.
type SlackNotification struct {
	URLEnv string `json:"urlEnv"`
}

// WebhookNotification is an HTTP endpoint sent signed JSON.
type WebhookNotification struct {
	URLEnv    string `json:"urlEnv"`
	SecretEnv string `json:"secretEnv"`
}

// Clouds holds the per-cloud settings; a nil entry is a cloud not configured.
type Clouds struct {
	AWS    *AWS    `json:"aws,omitempty"`
	Azure  *Azure  `json:"azure,omitempty"`
	GCP    *GCP    `json:"gcp,omitempty"`
	Lambda *Lambda `json:"lambda,omitempty"`
	OCI    *OCI    `json:"oci,omitempty"`
}

// Enabled lists the configured and enabled clouds in canonical order.
func (c Clouds) Enabled() []string {
	var out []string
	if c.AWS != nil && c.AWS.Enabled {
		out = append(out, "aws")
	}
	if c.Azure != nil && c.Azure.Enabled {
		out = append(out, "azure")
	}
	if c.GCP != nil && c.GCP.Enabled {
		out = append(out, "gcp")
	}
	if c.Lambda != nil && c.Lambda.Enabled {
		out = append(out, "lambda")
	}
	if c.OCI != nil && c.OCI.Enabled {
		out = append(out, "oci")
	}
	return out
}

// Regions returns the regions configured for a cloud. After Load they are
// never empty for an enabled cloud: an empty list was expanded to every
// catalog region.
func (c Clouds) Regions(cloud string) []string {
	switch cloud {
	case "aws":
		if c.AWS != nil {
			return c.AWS.Regions
		}
	case "azure":
		if c.Azure != nil {
			return c.Azure.Regions
		}
	case "gcp":
		if c.GCP != nil {
			return c.GCP.Regions
		}
	case "lambda":
		if c.Lambda != nil {
			return c.Lambda.Regions
		}
	case "oci":
		if c.OCI != nil {
			return c.OCI.Regions
		}
	}
	return nil
}

type StatusConfig struct {
	Dir string `json:"dir"`
}

type Defaults struct {
	MigrationThreshold float64 `json:"migrationThreshold"`
	// MaxDeletions is the former name of a count disruption budget; Load
	// turns it into Disruption.Budget.
	MaxDeletions    *int    `json:"maxDeletions,omitempty"`
	SpotRiskPremium float64 `json:"spotRiskPremium"`
	Prune           bool    `json:"prune"`
	// BlocklistFor is parsed from blocklistFor.
	BlocklistFor time.Duration `json:"-"`
	RawBlocklist string        `json:"blocklistFor"`
	Disruption   Disruption    `json:"disruption"`
}

// For returns the defaults that hold for a fleet: these, with what the
// fleet sets for itself in their place.
func (d Defaults) For(f *Fleet) Defaults {
	if f == nil {
		return d
	}
	o := f.Defaults
	if o.MigrationThreshold != nil {
		d.MigrationThreshold = *o.MigrationThreshold
	}
	if o.SpotRiskPremium != nil {
		d.SpotRiskPremium = *o.SpotRiskPremium
	}
	if o.Disruption != nil {
		if o.Disruption.Budget.Field != "" {
			d.Disruption.Budget = o.Disruption.Budget
		}
		if o.Disruption.RefuseOver != nil {
			d.Disruption.RefuseOver = o.Disruption.RefuseOver
			d.Disruption.RefuseField = o.Disruption.RefuseField
		}
	}
	return d
}

// Disruption limits the live nodes a run deletes (#Disruption).
type Disruption struct {
	// Budget is parsed from budget by Load, or from maxDeletions, or the
	// default.
	Budget Budget `json:"-"`
	// RefuseOver, when set, refuses whole a fleet's change that would
	// delete more live nodes than this; RefuseField says where it is set.
	RefuseOver  *int   `json:"refuseOver,omitempty"`
	RefuseField string `json:"-"`
}

// Budget is a disruption budget: how many live nodes a fleet may lose in
// one run, as a count or as a share of its live nodes.
type Budget struct {
	// Nodes is the count, when Percent is false.
	Nodes int
	// Percent marks a share; Hundredths is it in hundredths of a percent
	// (1000 is 10 %), so that the count it gives is exact.
	Percent    bool
	Hundredths int
	// Field is where the budget is set, e.g. "defaults.disruption.budget"
	// or "fleets.train.defaults.disruption.budget"; Raw is its value as
	// written.
	Field, Raw string
}

// DefaultBudget holds where no budget is set.
var DefaultBudget = Budget{Percent: true, Hundredths: 1000, Field: "defaults.disruption.budget", Raw: "10%"}

// Limit is how many of live nodes the budget lets a run delete. A share
// rounds up, so that one above 0 % always allows a node.
func (b Budget) Limit(live int) int {
	if !b.Percent {
		return b.Nodes
	}
	return (live*b.Hundredths + 9999) / 10000
}

// FleetDefaults are the defaults a fleet sets for itself; nil is not set.
type FleetDefaults struct {
	MigrationThreshold *float64    `json:"migrationThreshold,omitempty"`
	SpotRiskPremium    *float64    `json:"spotRiskPremium,omitempty"`
	Disruption         *Disruption `json:"disruption,omitempty"`
}

type Reservation struct {
	Cloud        string `json:"cloud"`
	Region       string `json:"region"`
	InstanceType string `json:"instanceType"`
	Count        int    `json:"count"`
}

type Launch struct {
	DiskGB    int        `json:"diskGB"`
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
}

// Bootstrap is what a node runs at first boot (#Bootstrap).
type Bootstrap struct {
	File    string   `json:"file"`
	Format  string   `json:"format"`
	Secrets []string `json:"secrets"`
	// Source is the file as the repository holds it, read by Load; it
	// holds no secret, only references to them.
	Source []byte `json:"-"`
	// Digest names Source: "sha256:" and 12 hex digits. A node is tagged
	// with it, so a node launched from another version of the file is
	// known and replaced.
	Digest string `json:"digest,omitempty"`
	// PerNode says the file uses .Token, which differs from node to
	// node: such nodes are launched one to a call, never in batches.
	PerNode bool `json:"-"`
	// Used are the secrets the file uses, sorted: those of Secrets a
	// launch needs set.
	Used []string `json:"-"`
	// Pos is where the bootstrap is declared.
	Pos Position `json:"-"`
}

// Bootstrap formats.
const (
	BootstrapCloudInit = "cloud-init"
	BootstrapScript    = "script"
)

type AWS struct {
	Enabled bool     `json:"enabled"`
	Regions []string `json:"regions"`
	Launch  struct {
		Launch
		Image           string            `json:"image"`
		ImageByRegion   map[string]string `json:"imageByRegion"`
		SubnetByZone    map[string]string `json:"subnetByZone"`
		SecurityGroups  []string          `json:"securityGroups"`
		InstanceProfile string            `json:"instanceProfile"`
		IMDS            string            `json:"imds"`
	} `json:"launch"`
}

type Azure struct {
	Enabled       bool     `json:"enabled"`
	Subscription  string   `json:"subscription"`
	ResourceGroup string   `json:"resourceGroup"`
	Regions       []string `json:"regions"`
	Launch        struct {
		Launch
		Image          string            `json:"image"`
		SubnetByRegion map[string]string `json:"subnetByRegion"`
		AdminUsername  string            `json:"adminUsername"`
		SSHPublicKey   string            `json:"sshPublicKey"`
		Identity       string            `json:"identity"`
	} `json:"launch"`
}

type GCP struct {
	Enabled bool     `json:"enabled"`
	Project string   `json:"project"`
	Regions []string `json:"regions"`
	Launch  struct {
		Launch
		Image          string            `json:"image"`
		Network        string            `json:"network"`
		SubnetByRegion map[string]string `json:"subnetByRegion"`
		ServiceAccount string            `json:"serviceAccount"`
		Scopes         []string          `json:"scopes"`
		ExternalIP     bool              `json:"externalIP"`
	} `json:"launch"`
}

// Lambda is Lambda Cloud, a GPU cloud without zones, spot market, tags or
// idempotency tokens: its API key is read from LAMBDA_API_KEY, never from
// the repository.
type Lambda struct {
	Enabled bool     `json:"enabled"`
	Regions []string `json:"regions"`
	Launch  struct {
		Launch
		// SSHKeyName names the account's SSH key every node gets: Lambda
		// launches take exactly one.
		SSHKeyName string `json:"sshKeyName"`
		// SSHPublicKey, when set, is the key gpufleet adds under
		// SSHKeyName if the account lacks one of that name.
		SSHPublicKey string `json:"sshPublicKey"`
		// Image is the image family to boot, "" for Lambda's default.
		Image string `json:"image"`
	} `json:"launch"`
}

// OCI is Oracle Cloud Infrastructure, reached through its official Go SDK
// with the SDK's own credentials (~/.oci/config, or the file
// OCI_CONFIG_FILE names), never from the repository. GPU shapes there are
// sold on demand; nodes carry gpufleet's freeform tags.
type OCI struct {
	Enabled bool `json:"enabled"`
	// Compartment is the OCID of the compartment nodes are launched in
	// and listed from.
	Compartment string   `json:"compartment"`
	Regions     []string `json:"regions"`
	Launch      struct {
		Launch
		// ImageByRegion is the image each region's nodes boot, by OCID:
		// OCI's image OCIDs are regional.
		ImageByRegion map[string]string `json:"imageByRegion"`
		// SubnetByRegion is the subnet of each region's nodes' primary
		// VNIC, by OCID.
		SubnetByRegion map[string]string `json:"subnetByRegion"`
		// SSHPublicKey, when set, is put in every node's
		// ssh_authorized_keys metadata.
		SSHPublicKey string `json:"sshPublicKey"`
	} `json:"launch"`
}

// Capacity policies of a workload.
const (
	CapacityOnDemand     = "on-demand"
	CapacitySpot         = "spot"
	CapacitySpotFallback = "spot-fallback"
)

// Fleet is one team's set of workloads.
type Fleet struct {
	Name   string            `json:"name"`
	Owner  string            `json:"owner"`
	Budget *float64          `json:"budget,omitempty"`
	Labels map[string]string `json:"labels"`
	// Suspended fleets are planned and reported but never changed.
	Suspended bool `json:"suspended"`
	// Defaults are what the fleet sets in place of gpufleet.defaults;
	// Config.Defaults.For merges them.
	Defaults FleetDefaults `json:"defaults"`
	// Workloads sorted by name.
	Workloads []Workload `json:"-"`
	// Pos is where the fleet is declared.
	Pos Position `json:"-"`
}

// Workload is a set of identical GPU nodes.
type Workload struct {
	Name string `json:"name"`
	GPU  struct {
		// Model is normalised (e.g. "A10" becomes "A10G").
		Model   string `json:"model"`
		PerNode int    `json:"perNode"`
	} `json:"gpu"`
	Nodes     int    `json:"nodes"`
	Capacity  string `json:"capacity"`
	Priority  int    `json:"priority"`
	Placement struct {
		// Clouds is never empty after Load: absent means every enabled cloud.
		Clouds  []string `json:"clouds"`
		Regions struct {
			Allow []string `json:"allow"`
			Deny  []string `json:"deny"`
		} `json:"regions"`
		Zones []string `json:"zones"`
		Gang  string   `json:"gang"`
	} `json:"placement"`
	Spread struct {
		MaxPerCloud  float64 `json:"maxPerCloud"`
		MaxPerRegion float64 `json:"maxPerRegion"`
		// MaxPerZone caps the nodes in one zone; 0 is no cap.
		MaxPerZone int `json:"maxPerZone,omitempty"`
	} `json:"spread"`
	Movable             bool              `json:"movable"`
	MaxPricePerNodeHour *float64          `json:"maxPricePerNodeHour,omitempty"`
	Data                *Data             `json:"data,omitempty"`
	RunHours            float64           `json:"runHours"`
	Labels              map[string]string `json:"labels"`
	// Bootstrap is the workload's own; BootstrapFor gives the one a
	// cloud's nodes run.
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
	// EFA asks for Elastic Fabric Adapters on the workload's AWS nodes.
	EFA bool     `json:"efa,omitempty"`
	Pos Position `json:"-"`
}

// Gang reports whether every node must share one region, or one zone.
func (w *Workload) Gang() bool { return w.Placement.Gang != "" }

// GangGroup is what all of a gang's nodes share: the region, or for a zone
// gang the zone, of an offer, named with its cloud ("aws/us-east-1"), as a
// region's or zone's name alone may be another cloud's too: Lambda's
// us-east-1 is not AWS's.
func (w *Workload) GangGroup(cloud, region, zone string) string {
	if w.Placement.Gang == "zone" {
		return cloud + "/" + region + "/" + zone
	}
	return RegionKey(cloud, region)
}

// RegionKey names a cloud's region: "aws/us-east-1".
func RegionKey(cloud, region string) string { return cloud + "/" + region }

// Data is where a workload's data lives.
type Data struct {
	Cloud  string  `json:"cloud"`
	Region string  `json:"region"`
	SizeGB float64 `json:"sizeGB"`
}
