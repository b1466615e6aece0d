// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"context"
	"fmt"
	"maps"
	"slices"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/plancomment"
)

// MaxLength is GitLab's limit on a note's body, in characters (the notes
// API: "Limited to 1,000,000 characters").
const MaxLength = 1_000_000

// Result says what Post did, by note ID.
type Result struct {
	Created, Updated, Deleted []int64
	Parts                     int
}

// MergeRequest names a merge request: its project's numeric ID or full
// path (group/name) and its IID, the number shown as !IID.
type MergeRequest struct {
	Project string
	IID     int64
}

func (mr MergeRequest) String() string { return fmt.Sprintf("%s!%d", mr.Project, mr.IID) }

// Post makes the merge request's plan note say body: it updates the notes
// that start with marker, one per part, creates what is missing and
// deletes parts left over from a longer plan, and duplicates of a part a
// retried create may have left.
func (c *Client) Post(ctx context.Context, mr MergeRequest, marker, body string) (Result, error) {
	parts := plancomment.Split(body, MaxLength-512)
	existing, extra, err := c.find(ctx, mr, marker)
	if err != nil {
		return Result{}, err
	}
	res := Result{Parts: len(parts)}
	for i, part := range parts {
		text := plancomment.Body(marker, part, i+1, len(parts))
		if id, ok := existing[i+1]; ok {
			opt := &gitlab.UpdateMergeRequestNoteOptions{Body: gitlab.Ptr(text)}
			if _, _, err := c.notes.UpdateMergeRequestNote(mr.Project, mr.IID, id, opt, gitlab.WithContext(ctx)); err != nil {
				return res, c.explain(fmt.Sprintf("updating plan note %d of %s", id, mr), err)
			}
			res.Updated = append(res.Updated, id)
			delete(existing, i+1)
			continue
		}
		opt := &gitlab.CreateMergeRequestNoteOptions{Body: gitlab.Ptr(text)}
		n, _, err := c.notes.CreateMergeRequestNote(mr.Project, mr.IID, opt, gitlab.WithContext(ctx))
		if err != nil {
			return res, c.explain("creating the plan note of "+mr.String(), err)
		}
		res.Created = append(res.Created, n.ID)
	}
	left := slices.Concat(slices.Collect(maps.Values(existing)), extra)
	slices.Sort(left)
	for _, id := range left {
		if _, err := c.notes.DeleteMergeRequestNote(mr.Project, mr.IID, id, gitlab.WithContext(ctx)); err != nil {
			return res, c.explain(fmt.Sprintf("deleting the left-over plan note %d of %s", id, mr), err)
		}
		res.Deleted = append(res.Deleted, id)
	}
	return res, nil
}

// find lists the merge request's notes, oldest first, and returns those
// that start with marker by part number; the oldest note wins a duplicate
// number and the others are extra. System notes ("added 2 commits") are
// GitLab's, never ours.
func (c *Client) find(ctx context.Context, mr MergeRequest, marker string) (map[int]int64, []int64, error) {
	found := map[int]int64{}
	var extra []int64
	opt := &gitlab.ListMergeRequestNotesOptions{
		ListOptions: gitlab.ListOptions{PerPage: 100},
		OrderBy:     gitlab.Ptr("created_at"),
		Sort:        gitlab.Ptr("asc"),
	}
	page := []gitlab.RequestOptionFunc{gitlab.WithContext(ctx)}
	for {
		notes, resp, err := c.notes.ListMergeRequestNotes(mr.Project, mr.IID, opt, page...)
		if err != nil {
			return nil, nil, c.explain("listing the notes of "+mr.String(), err)
		}
		for _, n := range notes {
			if n.System {
				continue
			}
			part, ours := plancomment.Part(n.Body, marker)
			if !ours {
				continue
			}
			if _, dup := found[part]; dup {
				extra = append(extra, n.ID)
				continue
			}
			found[part] = n.ID
		}
		// The next page comes from the Link header, or X-Next-Page.
		next, more := gitlab.WithNext(resp)
		if !more {
			return found, extra, nil
		}
		page = []gitlab.RequestOptionFunc{gitlab.WithContext(ctx), next}
	}
}
