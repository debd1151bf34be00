// Package api is edgellm's transport-neutral core: what a client asks
// (Request: a prompt or a conversation with tool calls and results, sampling,
// stop strings, JSON or schema constraints, tools, thinking), what it gets
// back (Answer: text, reasoning, tool calls with ids, finish reason, usage
// and timings), the error codes and the typed Error every transport maps to
// its own error shape, the limits and validation that do not depend on a
// wire format, and the Responder through which the daemon's queue and worker
// answer a request whatever transport it came from.
//
// Transports are adapters over this package: mqtt/ parses its payloads into
// a Request and encodes an Answer as its final message; the HTTP APIs
// (OpenAI, Ollama) are beside it in api/openai and api/ollama, answering
// through a Buffered responder. The JSON
// tags of these types are edgellm's own JSON shape, the one the MQTT wire
// carries; other APIs convert from their own shapes. The package imports
// nothing of edgellm's.
package api
