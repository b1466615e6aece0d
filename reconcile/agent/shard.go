// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// Shard is the part of the repositories one replica of several reconciles,
// as Argo CD's application controller shards clusters: every replica is
// given every repository and the same replica count, and keeps those whose
// hash falls to its ordinal. A repository so always has one replica, the
// same one across restarts; the Git lock stays the safety net for the
// moment two replicas disagree (while the count changes).
type Shard struct {
	// Ordinal is this replica's number, from 0; Replicas how many there
	// are. The zero Shard is a single replica that keeps everything.
	Ordinal, Replicas int
}

// owns reports whether the shard reconciles a repository, by its id.
func (s Shard) owns(id string) bool {
	if s.Replicas <= 1 {
		return true
	}
	return ShardOf(id, s.Replicas) == s.Ordinal
}

func (s Shard) check() error {
	switch {
	case s == Shard{}:
		return nil
	case s.Replicas < 1:
		return fmt.Errorf("replica %d of %d: there is at least one replica", s.Ordinal, s.Replicas)
	case s.Ordinal < 0 || s.Ordinal >= s.Replicas:
		return fmt.Errorf("replica %d of %d: the ordinal must be from 0 to %d", s.Ordinal, s.Replicas, s.Replicas-1)
	}
	return nil
}

// ShardOf is the ordinal of the replica, of replicas, that reconciles the
// repository with this id (its URL, and #branch when one is named).
func ShardOf(id string, replicas int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(replicas))
}

// OrdinalFromHostname reads a StatefulSet pod's ordinal from its name,
// "gpufleet-2" → 2.
func OrdinalFromHostname(host string) (int, error) {
	i := strings.LastIndexByte(host, '-')
	n, err := strconv.Atoi(host[i+1:])
	if i < 0 || err != nil || n < 0 {
		return 0, fmt.Errorf("the host name %q does not end in a StatefulSet ordinal (-0, -1, …): give --ordinal", host)
	}
	return n, nil
}

// othersOwner finds the replica whose shard holds the repository a push is
// about, when another replica's does.
func (a *Agent) othersOwner(push pushEvent) (int, bool) {
	repo := push.Repository
	for _, w := range a.others {
		for _, u := range []string{repo.CloneURL, repo.SSHURL, repo.GitURL, repo.HTMLURL} {
			if strings.TrimSpace(u) != "" && w.key == repoKey(u) {
				return ShardOf(w.id, a.opts.Shard.Replicas), true
			}
		}
	}
	return 0, false
}

// forwardedHeader marks a delivery one replica passed to another, which
// passes it no further.
const forwardedHeader = "X-Gpufleet-Forwarded"

// forwardTimeout bounds handing a delivery to its replica: GitHub waits ten
// seconds for the answer.
const forwardTimeout = 5 * time.Second

// peers carries deliveries to the other replicas and follows no redirect:
// the signed body goes to the replica --peer-url names, or nowhere. Plain
// http stays allowed, as --peer-url asks: the replicas talk inside the
// cluster, and what they pass carries no credential, only GitHub's
// signature of that very body.
var peers = outbound.NewClient(outbound.Policy{Timeout: forwardTimeout})

// forwardPush hands a push for another replica's repository to that
// replica, as GitHub sent it (the signature still holds), so a webhook
// reaching any replica behind the Service triggers the run. The owner's
// answer is passed back as it is: one that did not answer, or answered a
// server error, leaves the delivery unhandled, so neither replica
// remembers it and GitHub's redelivery runs.
func (a *Agent) forwardPush(w http.ResponseWriter, r *http.Request, raw []byte, owner int, log *slog.Logger) {
	if a.opts.Peer == nil || r.Header.Get(forwardedHeader) != "" {
		log.Info("webhook for another replica's repository", "replica", owner)
		ignore(w, fmt.Sprintf("reconciled by replica %d", owner))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), forwardTimeout)
	defer cancel()
	url := strings.TrimSuffix(a.opts.Peer(owner), "/") + r.URL.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		replyError(w, http.StatusInternalServerError, "the peer URL is not valid")
		return
	}
	for _, h := range []string{"Content-Type", "X-GitHub-Event", "X-GitHub-Delivery", "X-Hub-Signature-256"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(forwardedHeader, strconv.Itoa(a.opts.Shard.Ordinal))
	resp, err := peers.Do(req)
	if err != nil {
		log.Warn("could not forward a webhook to its replica", "replica", owner, "err", err)
		replyError(w, http.StatusBadGateway, fmt.Sprintf("replica %d, whose shard holds the repository, did not answer", owner))
		return
	}
	defer resp.Body.Close()
	log.Info("webhook forwarded to its replica", "replica", owner, "status", resp.StatusCode)
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, io.LimitReader(resp.Body, 1<<16))
}
