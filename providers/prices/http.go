// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// maxPage bounds one page of a price API's answer; real pages are a few
// megabytes at most.
const maxPage = 64 << 20

// maxPages bounds how many pages one listing may take, so that an API
// whose page tokens go round in a circle cannot keep a refresh running.
const maxPages = 10000

// DefaultTimeout bounds one request to a price API whose Options say
// nothing: a page is a few megabytes at most.
const DefaultTimeout = time.Minute

// checkEndpoint parses a loader's endpoint, its API's own when empty,
// refusing one that is not https unless it is loopback or allowHTTP.
func checkEndpoint(cloud, endpoint, api string, allowHTTP bool) (*url.URL, error) {
	u, err := outbound.CheckURL(cmpOr(endpoint, api), allowHTTP)
	if err != nil {
		return nil, fmt.Errorf("%s prices, endpoint %q %w", cloud, endpoint, err)
	}
	return u, nil
}

// newRetryClient returns an HTTP client that retries 429s, 5xxs and
// failed connections as retry says, honouring Retry-After up to
// retry.MaxWait. It sends to endpoint's origin only, each attempt bounded
// by the loader's timeout. It logs retries with the request's path only:
// query strings can hold an API key.
func newRetryClient(b *base, endpoint *url.URL) *retryablehttp.Client {
	policy := outbound.Policy{Timeout: cmp.Or(b.timeout, DefaultTimeout), Origin: endpoint}
	if b.client != nil {
		policy.Transport = b.client.Transport
	}
	c := outbound.Retrying(policy)
	c.RetryMax = b.retry.Max
	c.RetryWaitMin = b.retry.MinWait
	c.RetryWaitMax = b.retry.MaxWait
	c.Backoff = backoff
	c.RequestLogHook = func(_ retryablehttp.Logger, r *http.Request, retry int) {
		if retry > 0 {
			b.log.Debug("retrying a price request", "cloud", b.cloud, "url", redact(r.URL), "retry", retry)
		}
	}
	c.ErrorHandler = func(resp *http.Response, err error, tries int) (*http.Response, error) {
		if resp != nil {
			// The status says more than the body, which the caller
			// would otherwise read; drain it so the connection is reused.
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			return nil, &attemptsError{tries: tries, status: resp.StatusCode}
		}
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			// url.Error repeats the whole URL, API key and all.
			err = urlErr.Err
		}
		return nil, &attemptsError{tries: tries, err: err}
	}
	return c
}

// backoff is retryablehttp's exponential backoff, which honours
// Retry-After on 429 and 503, with the server's wait capped at max too.
func backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	return min(retryablehttp.DefaultBackoff(minWait, maxWait, attempt, resp), maxWait)
}

// attemptsError is a request that failed every attempt it was allowed.
type attemptsError struct {
	tries  int
	status int
	err    error
}

func (e *attemptsError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("HTTP %d %s after %d attempts", e.status, http.StatusText(e.status), e.tries)
	}
	return fmt.Sprintf("%v after %d attempts", e.err, e.tries)
}

func (e *attemptsError) Unwrap() error { return e.err }

// getJSON fetches a URL and decodes its JSON answer into v. A status
// other than 200 that retrying cannot help is an error quoting the
// body's message.
func getJSON(ctx context.Context, c *retryablehttp.Client, u *url.URL, v any) error {
	return getJSONAs(ctx, c, u, "", v)
}

// getJSONAs is getJSON with an Authorization header, when authorization
// is not empty. The header's value appears in no error.
func getJSONAs(ctx context.Context, c *retryablehttp.Client, u *url.URL, authorization string, v any) error {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("GET %s, %w", redact(u), err)
	}
	req.Header.Set("Accept", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s, %w", redact(u), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPage+1))
	if err != nil {
		return fmt.Errorf("GET %s, reading the answer, %w", redact(u), err)
	}
	if len(body) > maxPage {
		return fmt.Errorf("GET %s, the answer is over %d bytes", redact(u), maxPage)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s, HTTP %d: %s", redact(u), resp.StatusCode, errorMessage(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s, decoding the answer, %w", redact(u), err)
	}
	return nil
}

// errorMessage finds the message in the error bodies the price APIs send:
// {"error":{"message":…}} (GCP, Azure) or {"Error":{"Message":…}} (Azure
// retail prices), else the start of the body.
func errorMessage(body []byte) string {
	var e struct {
		Error *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := string(body)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// redact is a URL without its query, which can carry an API key.
func redact(u *url.URL) string {
	r := *u
	r.RawQuery = ""
	r.User = nil
	return r.String()
}
