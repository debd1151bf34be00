// Package grammar constrains token-by-token generation so that the text
// produced is valid JSON (RFC 8259), optionally valid against a JSON Schema.
//
// # Pieces
//
//   - A [Grammar] describes the texts that are allowed: [JSON] for any JSON
//     value, [CompileSchema] for the values a JSON Schema accepts (see there
//     for the supported keywords). It is immutable and may be shared.
//   - A [Vocab] holds what the masking needs to know about a vocabulary: a
//     trie over the bytes every token produces and the tokens that are plain
//     string content. Build it once per model with [NewVocab]; it is
//     immutable and may be shared.
//   - A [Matcher] follows one generation: [Matcher.Mask] sets the logits of
//     the tokens that may not come next to -Inf, [Matcher.Accept] records
//     the token that was chosen. One per generation stream, reusable with
//     [Matcher.Reset]; after warm-up neither call allocates.
//
// A generation loop looks like this:
//
//	m.Reset()
//	for n := 0; n < maxTokens && !m.Done(); n++ {
//		if err := m.Mask(logits, maxTokens-n); err != nil { ... }
//		id := sampler.Sample(logits)
//		if tok.IsEOG(id) { break }          // only offered once the value is complete
//		if err := m.Accept(id); err != nil { ... } // cannot fail for a token Mask allowed
//		logits = forward(id)
//	}
//
// # Budget
//
// The second argument of Mask is the number of tokens that may still be
// generated, the one being chosen included. The matcher knows, for its
// current state, the fewest bytes that complete the value (for an object
// with required properties that includes writing them), and it only allows
// tokens after which that many bytes still fit in the remaining tokens.
// Every byte that a completion may need must be a token of its own (byte
// fallback tokens in SentencePiece vocabularies, the 256 byte tokens of
// byte-level BPE); [Grammar.NewMatcher] checks this. So a generation that
// runs out of tokens always ends with a complete value, and a value that
// cannot be continued (the closing brace of the outermost object) ends the
// generation by itself: [Matcher.Done] turns true.
//
// # Constraining from the middle of a generation
//
// For tool calls in "auto" mode the model writes free text until it starts
// a call. From then on the matcher takes over: Reset it, feed the bytes of
// the call that were already generated (for example the "{" at the end of
// the last token) with [Matcher.AcceptBytes], and continue with Mask and
// Accept. [ToolCallSchema] builds the schema of a call to one of several
// tools.
//
// # Composed grammars
//
// A [Builder] composes a grammar of texts around JSON values, such as the
// tool calls of chat formats: fixed texts ([Builder.Text]), optional
// whitespace ([Builder.Space]), sequences, repetitions with a separator,
// alternatives, values of a JSON Schema ([Builder.Value]) and objects with
// bare keys ([Builder.Arguments], for Python's name(key=value, ...) calls).
// Its values are written in a [Dialect]: JSON, Python literals (True,
// False, None) or FunctionGemma's (strings between <escape> marks, bare
// keys). Budgets, masking and completion work as for schema grammars.
//
// # Shape of the output
//
// Whitespace is allowed where RFC 8259 allows it, but at most
// [Options.MaxWhitespace] bytes in a row, and never after the complete
// value. Numbers have at most 16 digits before and after the decimal point
// and at most 2 exponent digits, so every number fits a float64; numbers
// with bounds (minimum, maximum...) have no exponent. Object
// properties may come in any order, each declared property at most once;
// additional property names are distinct from each other and from the
// declared ones. Strings are valid UTF-8 and escape sequences are checked,
// surrogate pairs included.
//
// Where the grammar leaves a choice that later bytes settle (the branches of
// anyOf, a name that may be a declared or an additional property), the
// matcher follows every possibility at once, up to 128 of them; beyond that
// the extra ones are dropped, which keeps the text valid but may make some
// values unreachable (a tool call schema with more than 128 tools).
package grammar
