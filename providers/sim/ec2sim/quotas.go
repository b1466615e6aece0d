// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Service Quotas speaks the AWS JSON 1.1 protocol: a POST of a JSON body
// whose operation the X-Amz-Target header names, answered in JSON, errors
// named by the X-Amzn-ErrorType header and the body's __type.
const (
	quotasTargetPrefix = "ServiceQuotasV20190624."
	// quotasSigningName is the service a request to Service Quotas is
	// signed for, in the SigV4 credential scope.
	quotasSigningName = "servicequotas"
	jsonContentType   = "application/x-amz-json-1.1"
	// ec2ServiceCode is the only service whose quotas the front knows.
	ec2ServiceCode = "ec2"
	ec2ServiceName = "Amazon Elastic Compute Cloud (Amazon EC2)"
	// quotasPageSize is ListServiceQuotas' largest page, and its default.
	quotasPageSize = 100
	// quotasErrorNamespace qualifies __type as the service writes it; the
	// SDK strips it.
	quotasErrorNamespace = "com.amazonaws.servicequotas#"
)

type quotaOperation func(s *Server, req *request, body []byte) (any, *apiError)

var quotaOperations = map[string]quotaOperation{
	"GetServiceQuota":   (*Server).getServiceQuota,
	"ListServiceQuotas": (*Server).listServiceQuotas,
}

// serviceQuotaJSON is a types.ServiceQuota on the wire.
type serviceQuotaJSON struct {
	ServiceCode         string           `json:"ServiceCode"`
	ServiceName         string           `json:"ServiceName"`
	QuotaArn            string           `json:"QuotaArn"`
	QuotaCode           string           `json:"QuotaCode"`
	QuotaName           string           `json:"QuotaName"`
	Value               float64          `json:"Value"`
	Unit                string           `json:"Unit"`
	Adjustable          bool             `json:"Adjustable"`
	GlobalQuota         bool             `json:"GlobalQuota"`
	UsageMetric         *usageMetricJSON `json:"UsageMetric,omitempty"`
	QuotaAppliedAtLevel string           `json:"QuotaAppliedAtLevel,omitempty"`
}

type usageMetricJSON struct {
	MetricNamespace               string            `json:"MetricNamespace"`
	MetricName                    string            `json:"MetricName"`
	MetricDimensions              map[string]string `json:"MetricDimensions"`
	MetricStatisticRecommendation string            `json:"MetricStatisticRecommendation"`
}

type getServiceQuotaInput struct {
	ServiceCode *string `json:"ServiceCode"`
	QuotaCode   *string `json:"QuotaCode"`
	ContextID   *string `json:"ContextId"`
}

type getServiceQuotaOutput struct {
	Quota serviceQuotaJSON `json:"Quota"`
}

type listServiceQuotasInput struct {
	ServiceCode         *string `json:"ServiceCode"`
	QuotaCode           *string `json:"QuotaCode"`
	QuotaAppliedAtLevel *string `json:"QuotaAppliedAtLevel"`
	MaxResults          *int    `json:"MaxResults"`
	NextToken           *string `json:"NextToken"`
}

type listServiceQuotasOutput struct {
	Quotas    []serviceQuotaJSON `json:"Quotas"`
	NextToken string             `json:"NextToken,omitempty"`
}

// usageClasses is the Class dimension of the usage metric EC2's vCPU
// quotas name: the class of instance families and the market.
var usageClasses = map[string]string{
	"L-1216C47A": "Standard/OnDemand",
	"L-DB2E81BA": "G/OnDemand",
	"L-417A185B": "P/OnDemand",
	"L-34B43A08": "Standard/Spot",
	"L-3819A6DF": "G/Spot",
	"L-7212CCBC": "P/Spot",
}

// serveJSON answers a Service Quotas call.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, requestID, target string) {
	defer func() {
		if p := recover(); p != nil {
			writeJSONError(w, requestID, &apiError{Status: http.StatusInternalServerError, Code: "ServiceException", Message: "Something went wrong."})
		}
	}()
	out, apiErr := s.serveQuotas(w, r, requestID, target)
	if apiErr != nil {
		writeJSONError(w, requestID, apiErr)
		return
	}
	writeJSON(w, requestID, out)
}

func (s *Server) serveQuotas(w http.ResponseWriter, r *http.Request, requestID, target string) (any, *apiError) {
	name, ok := strings.CutPrefix(target, quotasTargetPrefix)
	handle, known := quotaOperations[name]
	if !ok || !known || r.Method != http.MethodPost {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "UnknownOperationException", Message: fmt.Sprintf("The operation %s is not served here.", target)}
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != jsonContentType {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "SerializationException", Message: "The request's Content-Type must be " + jsonContentType + "."}
	}
	region, service, apiErr := s.credentialScope(r, r.URL.Query().Get("X-Amz-Credential"))
	if apiErr != nil {
		return nil, jsonSignatureError(apiErr)
	}
	if service != "" && service != quotasSigningName {
		return nil, &apiError{Status: http.StatusForbidden, Code: "InvalidSignatureException", Message: fmt.Sprintf("Credential should be scoped to correct service: '%s'. ", quotasSigningName)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "SerializationException", Message: fmt.Sprintf("Request body exceeds %d bytes", maxBodyBytes)}
		}
		return nil, &apiError{Status: http.StatusBadRequest, Code: "SerializationException", Message: "The request body could not be read."}
	}
	req := &request{ctx: r.Context(), id: requestID, action: name, region: region}
	outcome, apiErr := s.intercept(req, "", "")
	if apiErr != nil {
		return nil, apiErr
	}
	if outcome.Err != nil {
		return nil, quotaFaultError(outcome.Err)
	}
	return handle(s, req, body)
}

func (s *Server) getServiceQuota(req *request, body []byte) (any, *apiError) {
	var in getServiceQuotaInput
	if apiErr := decodeJSON(body, &in); apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkCode("ServiceCode", in.ServiceCode, serviceCodePattern, true); apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkCode("QuotaCode", in.QuotaCode, quotaCodePattern, true); apiErr != nil {
		return nil, apiErr
	}
	if *in.ServiceCode != ec2ServiceCode {
		return nil, noSuchService()
	}
	if in.ContextID != nil && *in.ContextID != "" {
		// EC2's vCPU quotas apply to the account; none has a value per
		// resource.
		return nil, &apiError{Status: http.StatusNotFound, Code: "NoSuchResourceException", Message: "The request failed because applied value for the specified context Id do not exist."}
	}
	for _, q := range s.world.Quotas(cloud, req.region) {
		if q.Name == *in.QuotaCode {
			return getServiceQuotaOutput{Quota: s.renderQuota(req.region, q)}, nil
		}
	}
	// Service Quotas answers a quota code its service lacks with no message
	// at all.
	return nil, &apiError{Status: http.StatusNotFound, Code: "NoSuchResourceException"}
}

func (s *Server) listServiceQuotas(req *request, body []byte) (any, *apiError) {
	var in listServiceQuotasInput
	if apiErr := decodeJSON(body, &in); apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkCode("ServiceCode", in.ServiceCode, serviceCodePattern, true); apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkCode("QuotaCode", in.QuotaCode, quotaCodePattern, false); apiErr != nil {
		return nil, apiErr
	}
	pageSize := quotasPageSize
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > quotasPageSize {
			return nil, illegalArgument("MaxResults must be between 1 and %d.", quotasPageSize)
		}
		pageSize = *in.MaxResults
	}
	offset := 0
	if in.NextToken != nil && *in.NextToken != "" {
		n, ok := decodeQuotasToken(*in.NextToken)
		if !ok {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidPaginationTokenException", Message: "Invalid input was provided for the pagination token."}
		}
		offset = n
	}
	accountLevel := true
	if in.QuotaAppliedAtLevel != nil {
		switch *in.QuotaAppliedAtLevel {
		case "ACCOUNT", "ALL":
		case "RESOURCE":
			accountLevel = false
		default:
			return nil, illegalArgument("QuotaAppliedAtLevel must be one of ACCOUNT, RESOURCE or ALL.")
		}
	}
	if *in.ServiceCode != ec2ServiceCode {
		return nil, noSuchService()
	}

	out := listServiceQuotasOutput{Quotas: []serviceQuotaJSON{}}
	var quotas []serviceQuotaJSON
	for _, q := range s.world.Quotas(cloud, req.region) {
		if accountLevel && (in.QuotaCode == nil || *in.QuotaCode == q.Name) {
			quotas = append(quotas, s.renderQuota(req.region, q))
		}
	}
	if offset > len(quotas) {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidPaginationTokenException", Message: "Invalid input was provided for the pagination token."}
	}
	page := quotas[offset:]
	if len(page) > pageSize {
		page = page[:pageSize]
		out.NextToken = encodeQuotasToken(offset + pageSize)
	}
	out.Quotas = append(out.Quotas, page...)
	return out, nil
}

// renderQuota draws a quota as Service Quotas describes an EC2 vCPU quota:
// its unit is "None", what it counts is in its usage metric.
func (s *Server) renderQuota(region string, q sim.QuotaUsage) serviceQuotaJSON {
	out := serviceQuotaJSON{
		ServiceCode:         ec2ServiceCode,
		ServiceName:         ec2ServiceName,
		QuotaArn:            fmt.Sprintf("arn:aws:servicequotas:%s:%s:%s/%s", region, s.opts.AccountID, ec2ServiceCode, q.Name),
		QuotaCode:           q.Name,
		QuotaName:           q.Description,
		Value:               float64(q.Limit),
		Unit:                "None",
		Adjustable:          true,
		GlobalQuota:         q.Region == "",
		QuotaAppliedAtLevel: "ACCOUNT",
	}
	if class, ok := usageClasses[q.Name]; ok && q.Unit == catalog.VCPUs {
		out.UsageMetric = &usageMetricJSON{
			MetricNamespace:               "AWS/Usage",
			MetricName:                    "ResourceCount",
			MetricDimensions:              map[string]string{"Class": class, "Resource": "vCPU", "Service": "EC2", "Type": "Resource"},
			MetricStatisticRecommendation: "Maximum",
		}
	}
	return out
}

// The patterns Service Quotas' model gives its codes.
var (
	serviceCodePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{1,63}$`)
	quotaCodePattern   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{1,128}$`)
)

func checkCode(name string, v *string, pattern *regexp.Regexp, required bool) *apiError {
	switch {
	case v == nil && required:
		return illegalArgument("%s is required.", name)
	case v != nil && !pattern.MatchString(*v):
		return illegalArgument("%s %q is not valid.", name, *v)
	}
	return nil
}

func decodeJSON(body []byte, into any) *apiError {
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, into); err != nil {
		return &apiError{Status: http.StatusBadRequest, Code: "SerializationException", Message: "The request body is not a valid JSON object of the operation's input."}
	}
	return nil
}

func illegalArgument(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "IllegalArgumentException", Message: fmt.Sprintf(format, args...)}
}

func noSuchService() *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "NoSuchResourceException", Message: "The request failed because the specified service does not exist."}
}

// ListServiceQuotas' tokens must match its model's pattern, standard
// base64.
func encodeQuotasToken(position int) string {
	return base64.StdEncoding.EncodeToString([]byte("quotas:" + strconv.Itoa(position)))
}

func decodeQuotasToken(token string) (int, bool) {
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(raw), "quotas:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// quotaKindCodes is the code Service Quotas answers for each kind of
// injected failure that names none; anything else reads as its own fault.
var quotaKindCodes = map[sim.Kind]string{
	sim.KindThrottled:   "TooManyRequestsException",
	sim.KindServerError: "ServiceException",
}

// quotaCodeStatus is the HTTP status of each code in Service Quotas'
// model; any other code is a client error, 400.
var quotaCodeStatus = map[string]int{
	"AccessDeniedException":           http.StatusForbidden,
	"DependencyAccessDeniedException": http.StatusForbidden,
	"NoSuchResourceException":         http.StatusNotFound,
	"TooManyRequestsException":        http.StatusTooManyRequests,
	"ServiceException":                http.StatusInternalServerError,
	"InvalidSignatureException":       http.StatusForbidden,
}

// quotaMessages are the model's descriptions of its errors, which stand in
// for the service's wording.
var quotaMessages = map[string]string{
	"AccessDeniedException":    "You do not have sufficient permission to perform this action.",
	"TooManyRequestsException": "Due to throttling, the request was denied. Slow down the rate of request calls, or request an increase for this quota.",
	"ServiceException":         "Something went wrong.",
	"IllegalArgumentException": "Invalid input was provided.",
}

// quotaFaultError renders a failure a fault injected as Service Quotas
// would report it.
func quotaFaultError(e *sim.Error) *apiError {
	code := e.Code
	if code == "" {
		code = quotaKindCodes[e.Kind]
	}
	if code == "" {
		code = "ServiceException"
	}
	status, ok := quotaCodeStatus[code]
	if !ok {
		status = http.StatusBadRequest
	}
	msg, ok := quotaMessages[code]
	if !ok {
		msg = e.Message
	}
	return &apiError{Status: status, Code: code, Message: msg}
}

// jsonSignatureError renames the Query protocol's signature errors as the
// JSON services name them.
func jsonSignatureError(e *apiError) *apiError {
	switch e.Code {
	case "IncompleteSignature":
		return &apiError{Status: http.StatusBadRequest, Code: "IncompleteSignatureException", Message: e.Message}
	case "AuthFailure":
		return &apiError{Status: http.StatusForbidden, Code: "InvalidSignatureException", Message: e.Message}
	}
	return e
}

type jsonErrorBody struct {
	Type    string `json:"__type"`
	Message string `json:"Message,omitempty"`
}

func writeJSONError(w http.ResponseWriter, requestID string, e *apiError) {
	w.Header().Set("X-Amzn-ErrorType", e.Code)
	writeJSONStatus(w, requestID, e.Status, jsonErrorBody{Type: quotasErrorNamespace + e.Code, Message: e.Message})
}

func writeJSON(w http.ResponseWriter, requestID string, v any) {
	writeJSONStatus(w, requestID, http.StatusOK, v)
}

func writeJSONStatus(w http.ResponseWriter, requestID string, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("X-Amzn-RequestId", requestID)
	w.WriteHeader(status)
	w.Write(body)
}
