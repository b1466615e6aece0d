// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/base64"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SpotHistory makes DescribeSpotPriceHistory serve a past for every spot
// price: a seeded series that changes a few times a day within ±15 % of
// the catalog's price, for the 90 days EC2 keeps, and reaches the
// catalog's price when the catalog's prices took effect. Without it each
// zone and type has one point, the catalog's price, since then: the
// emulator then knows no earlier price, and a window that ends before
// that point is empty.
type SpotHistory struct {
	// Seed varies the series: the same seed, catalog and clock serve the
	// same history, so a test or an import can be repeated.
	Seed uint64
}

const (
	// spotHistoryKept is how far back EC2 keeps spot prices.
	spotHistoryKept = 90 * 24 * time.Hour
	// spotChangeEvery is the slot in each of which a seeded series changes
	// price once, at a seeded second: four changes a day.
	spotChangeEvery = 6 * time.Hour
	// spotSwing is how far a past price strays from the catalog's, in
	// millionths.
	spotSwing = 150_000
)

// spotPoint is a price taking effect in a zone.
type spotPoint struct {
	zone, instanceType string
	at                 time.Time
	micros             int64
}

// spotWindow is what a DescribeSpotPriceHistory call asks for: points in
// (start, end], and the one in force at start.
type spotWindow struct {
	start, end time.Time
	zone       string
	types      []string
}

// spotHistoryPoints lists the region's spot prices in a window, newest
// first as EC2 answers, ties by zone and type, as of asOf.
func (s *Server) spotHistoryPoints(region string, w spotWindow, asOf time.Time) []spotPoint {
	stamp := priceTimeAt(asOf, s.world.Catalog().FetchedAt)
	kept := asOf.Add(-spotHistoryKept)
	var out []spotPoint
	for _, q := range s.spotQuotes(region) {
		if (w.zone != "" && q.zone != w.zone) || (len(w.types) > 0 && !slices.Contains(w.types, q.instanceType)) {
			continue
		}
		series := []spotPoint{{q.zone, q.instanceType, stamp, q.micros}}
		if s.opts.SpotHistory != nil {
			series = s.opts.SpotHistory.series(q, kept, stamp)
		}
		out = append(out, inWindow(series, w.start, w.end)...)
	}
	slices.SortStableFunc(out, func(a, b spotPoint) int {
		return cmp.Or(b.at.Compare(a.at), cmp.Compare(a.zone, b.zone), cmp.Compare(a.instanceType, b.instanceType))
	})
	return out
}

// inWindow keeps of a series, oldest first, the points in (start, end]
// and the one in force at start: EC2 returns the last change before the
// start too, the price as of then.
func inWindow(series []spotPoint, start, end time.Time) []spotPoint {
	first := len(series)
	for i, p := range series {
		if p.at.After(start) {
			first = i
			break
		}
	}
	if first > 0 {
		first-- // the price in force at start
	}
	var out []spotPoint
	for _, p := range series[first:] {
		if p.at.After(end) {
			break
		}
		out = append(out, p)
	}
	return out
}

// series is a quote's seeded past from kept, oldest first: one change in
// each slot since then that is before stamp, when the catalog's own
// price takes over. The slots are fixed in absolute time, so a later call
// sees the same past.
func (h *SpotHistory) series(q spotQuote, kept, stamp time.Time) []spotPoint {
	var out []spotPoint
	slot := int64(spotChangeEvery / time.Second)
	for k := kept.Unix() / slot; ; k++ {
		at := time.Unix(k*slot+int64(h.draw(q, k, 't')%uint64(slot)), 0).UTC()
		if !at.Before(stamp) {
			break
		}
		if at.Before(kept) {
			continue
		}
		out = append(out, spotPoint{q.zone, q.instanceType, at, swing(q.micros, h.draw(q, k, 'p'))})
	}
	return append(out, spotPoint{q.zone, q.instanceType, stamp, q.micros})
}

// swing is a price within ±spotSwing of micros, above zero, rounded to
// the hundredth of a cent EC2 quotes spot in where the price allows it.
func swing(micros int64, r uint64) int64 {
	p := micros * (1_000_000 - spotSwing + int64(r%(2*spotSwing+1))) / 1_000_000
	if micros >= 10_000 {
		p = (p + 50) / 100 * 100
	}
	return max(p, 1)
}

// draw is the seeded number of a quote's slot k for one use.
func (h *SpotHistory) draw(q spotQuote, k int64, use byte) uint64 {
	f := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(h.Seed >> (8 * i))
	}
	f.Write(b[:])
	f.Write([]byte(q.zone + "\x00" + q.instanceType + "\x00"))
	f.Write([]byte{use})
	for i := range b {
		b[i] = byte(uint64(k) >> (8 * i))
	}
	f.Write(b[:])
	return mix(f.Sum64())
}

// mix is splitmix64's finaliser: FNV's low bits alone vary too little
// from one slot to the next.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// priceTimeAt is when the catalog's prices took effect as of now: when
// they were fetched, unless now is earlier.
func priceTimeAt(now, fetched time.Time) time.Time {
	now = now.UTC()
	if fetched.IsZero() || fetched.After(now) {
		return now.Truncate(time.Second)
	}
	return fetched.UTC()
}

// spotTimestamps are the forms a timestamp filter matches: the ISO 8601
// of the answers, and the "ddd MMM dd HH:mm:ss UTC YYYY" EC2's
// documentation gives for the filter.
func spotTimestamps(at time.Time) []string {
	return []string{at.Format(spotTimeFormat), at.Format(time.RFC3339), at.Format("Mon Jan 02 15:04:05 UTC 2006")}
}

const spotTimeFormat = "2006-01-02T15:04:05.000Z"

// A spot listing's token holds the time it was listed as of, so that its
// pages are of one listing while the world's clock moves on.
func encodeSpotToken(offset int, asOf time.Time) string {
	return base64.RawURLEncoding.EncodeToString([]byte("spot@" + strconv.FormatInt(asOf.UnixNano(), 10) + ":" + strconv.Itoa(offset)))
}

// decodeSpotToken reads a token encodeSpotToken wrote; none is the start
// of a listing as of now.
func decodeSpotToken(token string, now time.Time) (int, time.Time, *apiError) {
	if token == "" {
		return 0, now, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, time.Time{}, invalidPaginationToken()
	}
	rest, ok := strings.CutPrefix(string(raw), "spot@")
	stamp, position, ok2 := strings.Cut(rest, ":")
	nanos, err1 := strconv.ParseInt(stamp, 10, 64)
	offset, err2 := strconv.Atoi(position)
	if !ok || !ok2 || err1 != nil || err2 != nil || offset < 0 {
		return 0, time.Time{}, invalidPaginationToken()
	}
	return offset, time.Unix(0, nanos).UTC(), nil
}
