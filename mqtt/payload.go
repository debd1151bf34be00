package mqtt

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/edgellm/edgellm/api"
)

// Request is an MQTT request payload: the transport-neutral request and
// what routes its answer on MQTT.
type Request struct {
	// ID names the request in response topics; generated when absent.
	ID string `json:"id,omitempty"`
	// Request is what the client asks. Its Stream asks for chunks on
	// Topics.Stream(ID) (and Topics.ReasoningStream(ID)) before the final
	// answer.
	api.Request
	// ReplyTo replaces Topics.ResponseFor(ID) for the final answer.
	ReplyTo string `json:"reply_to,omitempty"`

	// Plain is true when the payload was bare text rather than JSON: the
	// answer is then bare text on Topics.Response().
	Plain bool `json:"-"`
	// GeneratedID is true when the request had no (valid) id of its own.
	GeneratedID bool `json:"-"`
}

// RequestLimits bound what ParseRequest accepts.
type RequestLimits struct {
	// MaxBytes is the largest payload (limits.max_prompt_bytes).
	MaxBytes int
	// MaxTokens is the largest max_tokens (limits.max_tokens).
	MaxTokens int
	// NoReplyTo lists topics reply_to may not name: the topics the daemon
	// itself reads requests from, so an answer cannot loop back as a request.
	NoReplyTo []string
}

// requestError wraps e so that its text names MQTT's request parsing
// ("mqtt: request: field …"); errors.As finds e.
func requestError(e *api.Error) error {
	return fmt.Errorf("mqtt: request: %w", e)
}

// NewID returns a fresh request id: 16 random hex digits.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ParseRequest parses a request payload. JSON (first non-space byte '{')
// is decoded strictly: unknown fields, wrong types and out-of-range values
// are errors naming the field. Any other UTF-8 text is a bare prompt (Plain).
//
// On error ParseRequest still returns a Request carrying what is needed to
// route the error answer: the payload's id and reply_to when they could be
// read and are valid (a generated id otherwise). The error wraps an
// *api.Error (its text starts "mqtt: request: ").
func ParseRequest(payload []byte, lim RequestLimits) (*Request, error) {
	if lim.MaxBytes > 0 && len(payload) > lim.MaxBytes {
		return salvage(payload, lim), requestError(&api.Error{Code: api.CodeTooLong,
			Message: fmt.Sprintf("payload is %d bytes, more than the limit of %d (limits.max_prompt_bytes)", len(payload), lim.MaxBytes)})
	}
	if !utf8.Valid(payload) {
		off := invalidUTF8Offset(payload)
		return salvage(payload, lim), requestError(&api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("payload is not valid UTF-8 (bad byte at offset %d)", off)})
	}
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && api.TooDeep(trimmed, api.MaxDepth) {
		return salvage(payload, lim), requestError(&api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("JSON nested more than %d levels deep", api.MaxDepth)})
	}
	if len(trimmed) > 0 && trimmed[0] != '{' && json.Valid(trimmed) {
		return salvage(payload, lim), requestError(&api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("a JSON request must be an object, got %s; send a prompt as text or a JSON request object", jsonKind(trimmed[0]))})
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		r := &Request{ID: NewID(), GeneratedID: true, Plain: true, Request: api.Request{Prompt: string(payload)}}
		if strings.TrimSpace(r.Prompt) == "" {
			return r, requestError(&api.Error{Code: api.CodeBadRequest, Message: "empty payload: send a prompt as text or a JSON request"})
		}
		return r, nil
	}

	r := &Request{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return salvage(payload, lim), requestError(decodeError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return salvage(payload, lim), requestError(&api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("trailing data after the JSON object at byte %d", dec.InputOffset())})
	}
	if err := r.validate(lim); err != nil {
		routed := salvage(payload, lim)
		r.ID, r.GeneratedID, r.ReplyTo = routed.ID, routed.GeneratedID, routed.ReplyTo
		return r, err
	}
	return r, nil
}

// salvage reads id and reply_to leniently from a payload that failed, keeping
// them only when valid, so the error answer reaches the requester. It reads
// the top-level object token by token, so the fields seen before a syntax
// error (or trailing data) still count; invalid UTF-8 is read as U+FFFD.
func salvage(payload []byte, lim RequestLimits) *Request {
	fields := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		depth, key := 1, ""
		for depth > 0 && len(fields) < 2 {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if v, ok := tok.(json.Delim); ok {
				if v == '{' || v == '[' {
					depth++
				} else {
					depth--
				}
				key = ""
				continue
			}
			if depth != 1 {
				continue
			}
			if key == "" {
				key, _ = tok.(string)
				continue
			}
			if str, ok := tok.(string); ok && (key == "id" || key == "reply_to") {
				if _, seen := fields[key]; !seen {
					fields[key] = str
				}
			}
			key = ""
		}
	}
	r := &Request{}
	if id, ok := fields["id"]; ok && ValidateRequestID(id) == nil {
		r.ID = id
	} else {
		r.ID, r.GeneratedID = NewID(), true
	}
	if rt, ok := fields["reply_to"]; ok && validReplyTo(rt, lim) == nil {
		r.ReplyTo = rt
	}
	return r
}

// jsonKind names the kind of JSON value that starts with byte c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// requestFields lists the JSON fields of Request, those of the embedded
// api.Request included, for error messages.
func requestFields() string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Tag.Get("json") == "" {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(Request{}))
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// decodeError turns encoding/json's errors into *api.Errors naming the
// field.
func decodeError(err error) *api.Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("invalid JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("want a JSON object, got %s", typ.Value)}
		}
		return api.BadField(field, "want %s, got %s", jsonTypeName(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &api.Error{Code: api.CodeBadRequest, Message: "invalid JSON: the payload ends in the middle of the object"}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		name = strings.TrimSuffix(name, `"`)
		return api.BadField(name, "unknown field; the fields are: %s", requestFields())
	}
	if strings.Contains(msg, "tool_choice") {
		return api.BadField("tool_choice", "%s", strings.TrimPrefix(msg, "json: "))
	}
	return &api.Error{Code: api.CodeBadRequest, Message: strings.TrimPrefix(msg, "json: ")}
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// validate checks the decoded request: its id (filled when absent) and
// reply_to, which are MQTT's, then the transport-neutral request.
func (r *Request) validate(lim RequestLimits) error {
	if r.ID == "" {
		r.ID, r.GeneratedID = NewID(), true
	} else if err := ValidateRequestID(r.ID); err != nil {
		return requestError(api.BadField("id", "%v", err))
	}
	if r.ReplyTo != "" {
		if err := validReplyTo(r.ReplyTo, lim); err != nil {
			return requestError(api.BadField("reply_to", "%v", err))
		}
	}
	if err := r.Request.Validate(api.Limits{MaxTokens: lim.MaxTokens}); err != nil {
		var e *api.Error
		if errors.As(err, &e) {
			return requestError(e)
		}
		return fmt.Errorf("mqtt: request: %w", err)
	}
	return nil
}

func validReplyTo(t string, lim RequestLimits) error {
	if err := ValidatePublishTopic(t); err != nil {
		return err
	}
	for _, own := range lim.NoReplyTo {
		if t == own {
			return fmt.Errorf("%q is a topic this node reads requests from; answering there would loop", t)
		}
	}
	return nil
}

// CancelRunning is the id that cancels whatever job is running (the Home
// Assistant cancel button sends it).
const CancelRunning = "*"

// ParseCancel parses a cancel payload: {"id":"<request id>"} (or "*" for
// the running job), or the bare id as text.
func ParseCancel(payload []byte) (string, error) {
	if !utf8.Valid(payload) {
		return "", requestError(&api.Error{Code: api.CodeBadRequest, Message: "cancel payload is not valid UTF-8"})
	}
	text := strings.TrimSpace(string(payload))
	id := text
	if strings.HasPrefix(text, "{") {
		var c struct {
			ID string `json:"id"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			e := decodeError(err)
			if e.Field != "" && e.Field != "id" {
				e.Message = `unknown field; a cancel is {"id":"<request id>"}`
			}
			return "", requestError(e)
		}
		id = c.ID
	}
	if id == CancelRunning {
		return id, nil
	}
	if err := ValidateRequestID(id); err != nil {
		return "", requestError(api.BadField("id", "%v", err))
	}
	return id, nil
}
