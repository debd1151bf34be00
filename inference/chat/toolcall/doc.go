// Package toolcall knows how each family of models writes tool calls: the
// text that begins them (the trigger), the grammar that constrains them
// from there so that they always parse and match the tools' schemas, and
// the parser that reads them back from an answer.
//
// A [Syntax] is chosen from the chat template by [Detect] (the markers its
// Jinja source writes), or by name with [ParseSyntax]. The daemon leaves
// the output free until [Syntax.Start] finds the trigger, then constrains
// the rest with [Syntax.Grammar]; for tool_choice "required" the grammar
// covers the whole answer, trigger included. [Syntax.Parse] returns the
// calls, each with an id unique in the answer, and the free text before
// them.
//
// # Syntaxes
//
// Below, ARGS is the arguments object as JSON, NAME the function's name,
// and "…" more calls of the same form. Whitespace is allowed where shown
// as a space or line break and between JSON tokens.
//
//	json           {"name": "NAME", "arguments": ARGS}
//	               {"name": "NAME", "arguments": ARGS}        (one a line, opening the answer)
//	hermes         <tool_call>
//	               {"name": "NAME", "arguments": ARGS}
//	               </tool_call>
//	               <tool_call>…</tool_call>                    (Hermes 2/3, Qwen 2.5/3, Granite 4, SmolLM3)
//	llama3-json    {"name": "NAME", "parameters": ARGS}        (as json, with "parameters"; Llama 3.1–3.3;
//	               the parser also reads calls separated by ";")
//	mistral        [TOOL_CALLS][{"name": "NAME", "arguments": ARGS, "id": "a1b2c3d4e"}, …]
//	               (Mistral Nemo and the v3 templates; "id" is optional when generating)
//	mistral-args   [TOOL_CALLS]NAME[ARGS]ARGS[TOOL_CALLS]NAME[ARGS]ARGS
//	               (Mistral Small 3.2, Ministral 3, Magistral, Devstral; the parser
//	               also reads NAME[CALL_ID]ID[ARGS]ARGS)
//	granite        <|tool_call|>[{"name": "NAME", "arguments": ARGS}, …]   (Granite 3.x)
//	phi4-mini      functools[{"name": "NAME", "arguments": ARGS}, …]       (Phi-4-mini, FireFunction v2)
//	lfm2-pythonic  <|tool_call_start|>[NAME(key="value", n=1, on=True), …]<|tool_call_end|>
//	               (LFM2, LFM2.5: Python keyword arguments; True, False, None)
//	functiongemma  <start_function_call>call:NAME{key:<escape>value<escape>,n:1}<end_function_call>
//	               (FunctionGemma: strings between <escape> marks, bare keys;
//	               more calls each in their own <start_function_call>…<end_function_call>)
//
// The parsers are lenient where models vary: JSON calls may be wrapped as
// {"function": {...}}, carry "parameters" for "arguments" or arguments as a
// JSON string; the last end mark may be missing; pythonic values may use
// single quotes and JSON's true, false and null. The grammars are strict:
// they allow the canonical form only, at most [MaxCalls] calls, and in the
// lfm2-pythonic and functiongemma syntaxes only the declared properties of
// the arguments (so a tool without declared properties is called with no
// arguments there).
//
// # Ids
//
// Every call gets an id unique in its answer: the mistral syntaxes keep the
// model's own when it has the nine letters and digits their templates
// require and make new ones of that form; the others get "call_" and 24
// random letters and digits.
//
// # Triggers that are control tokens
//
// Some vocabularies make a trigger or end mark a control token
// ([TOOL_CALLS] in Mistral's, <|tool_call_start|> in LFM2's), which decoded
// text leaves out. [Syntax.Marks] lists the marks so that the generator can
// write them into the output (inference.GenerateOptions.Marks) for Start
// and Parse to see. The grammar masks control tokens, so a mark inside the
// constrained part (an end mark, the trigger of a further call) is written
// with ordinary tokens; user-defined tokens (Qwen's <tool_call>) are text
// and may be chosen as they are.
package toolcall
