package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// A pre-tokenizer splits text into words before byte-level BPE runs on each
// word. The original tokenizers describe it as a list of regular expressions
// applied one after the other: each expression splits every piece produced so
// far into the text it matches and the text between matches (both kept, in
// order). Go's regexp package lacks the look-ahead these expressions use
// (\s+(?!\S)), so every expression is written here as a matcher: a function
// that, given a position, returns the length of the match the regular
// expression would find starting exactly there (0 for none). Scanning a piece
// left to right with such a matcher reproduces the regex's leftmost-first
// match sequence.

// matcher returns the length (in code points) of the match starting at cp[p],
// looking no further than cp[e-1]; 0 means no match at p.
type matcher func(cp []rune, p, e int) int

// stage splits the piece cp[s:e] and appends the end of every sub-piece to ends.
type stage func(cp []rune, s, e int, ends []int) []int

// preTokenizer is the list of stages for one tokenizer.ggml.pre name.
type preTokenizer struct {
	name         string
	stages       []stage
	ignoreMerges bool // whole words that are tokens skip merging (Llama 3 style)
}

// scan turns a matcher into a stage: it emits every match and every run of
// unmatched code points between matches as separate pieces.
func scan(m matcher) stage {
	return func(cp []rune, s, e int, ends []int) []int {
		gap := s
		for p := s; p < e; {
			n := m(cp, p, e)
			if n <= 0 {
				p++
				continue
			}
			if gap < p {
				ends = append(ends, p)
			}
			p += n
			ends = append(ends, p)
			gap = p
		}
		if gap < e {
			ends = append(ends, e)
		}
		return ends
	}
}

// Character classes. Invalid UTF-8 bytes are decoded as U+FFFD (a symbol),
// which is how the reference classifies them.

func isL(r rune) bool  { return unicode.IsLetter(r) }
func isN(r rune) bool  { return unicode.IsNumber(r) }
func isWS(r rune) bool { return unicode.IsSpace(r) } // the Unicode White_Space property, as \s
func isP(r rune) bool  { return unicode.IsPunct(r) }
func isS(r rune) bool  { return unicode.IsSymbol(r) }
func isM(r rune) bool  { return unicode.IsMark(r) }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isWS(r) && !isL(r) && !isN(r) }

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

func isASCIIDigit(r rune) bool  { return r >= '0' && r <= '9' }
func isASCIILetter(r rune) bool { return r|0x20 >= 'a' && r|0x20 <= 'z' }

// run returns the number of consecutive code points from p (before e) in class f.
func run(cp []rune, p, e int, f func(rune) bool) int {
	n := 0
	for p+n < e && f(cp[p+n]) {
		n++
	}
	return n
}

// optRun matches lead?[f]+ : one optional code point of class lead followed
// by one or more of class f (the optional part is greedy, as in a regex).
func optRun(cp []rune, p, e int, lead, f func(rune) bool) int {
	if lead(cp[p]) && p+1 < e && f(cp[p+1]) {
		return 1 + run(cp, p+1, e, f)
	}
	return run(cp, p, e, f)
}

func isSpaceChar(r rune) bool { return r == ' ' }

// contraction matches 's|'t|'re|'ve|'m|'ll|'d, ignoring ASCII case when fold
// is set.
func contraction(cp []rune, p, e int, fold bool) int {
	if cp[p] != '\'' || p+1 >= e {
		return 0
	}
	low := func(r rune) rune {
		if fold && r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	switch low(cp[p+1]) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if p+2 < e {
		a, b := low(cp[p+1]), low(cp[p+2])
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return 3
		}
	}
	return 0
}

// trailingSpace matches \s+(?!\S) followed by the \s+ fallback: a run of
// whitespace gives back its last character when a non-space follows it, so
// that the character can start the next word (" world").
func trailingSpace(cp []rune, p, e int) int {
	n := run(cp, p, e, isWS)
	if n > 1 && p+n < e {
		return n - 1
	}
	return n
}

// matchGPT2 is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(cp []rune, p, e int) int {
	if n := contraction(cp, p, e, false); n > 0 {
		return n
	}
	if n := optRun(cp, p, e, isSpaceChar, isL); n > 0 {
		return n
	}
	if n := optRun(cp, p, e, isSpaceChar, isN); n > 0 {
		return n
	}
	if n := optRun(cp, p, e, isSpaceChar, isOther); n > 0 {
		return n
	}
	return trailingSpace(cp, p, e)
}

// newlineSpace matches \s*[\r\n]+|\s+(?!\S)|\s+ at a whitespace character.
func newlineSpace(cp []rune, p, e int) int {
	n := run(cp, p, e, isWS)
	// \s*[\r\n]+ : the longest whitespace run that ends in a line break
	for k := n; k > 0; k-- {
		if isCRLF(cp[p+k-1]) {
			return k
		}
	}
	return trailingSpace(cp, p, e)
}

// matchLlama3 returns the matcher of
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// with D = maxDigits (3 for Llama 3, 1 for Qwen2).
func matchLlama3(maxDigits int) matcher {
	return func(cp []rune, p, e int) int {
		if n := contraction(cp, p, e, true); n > 0 {
			return n
		}
		c := cp[p]
		if isL(c) {
			return run(cp, p, e, isL)
		}
		if !isCRLF(c) && !isN(c) && p+1 < e && isL(cp[p+1]) {
			return 1 + run(cp, p+1, e, isL)
		}
		if isN(c) {
			return min(maxDigits, run(cp, p, e, isN))
		}
		if n := optRun(cp, p, e, isSpaceChar, isOther); n > 0 {
			return n + run(cp, p+n, e, isCRLF)
		}
		return newlineSpace(cp, p, e)
	}
}

// isDSV3Punct is the ASCII class [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~].
func isDSV3Punct(r rune) bool {
	return r < 0x80 && r > ' ' && r != 0x7f && !isASCIIDigit(r) && !isASCIILetter(r)
}

// matchDeepseekV3 is
//
//	[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchDeepseekV3(cp []rune, p, e int) int {
	c := cp[p]
	if isDSV3Punct(c) && p+1 < e && isASCIILetter(cp[p+1]) {
		return 1 + run(cp, p+1, e, isASCIILetter)
	}
	isLM := func(r rune) bool { return isL(r) || isM(r) }
	if n := optRun(cp, p, e, func(r rune) bool { return !isCRLF(r) && !isL(r) && !isP(r) && !isS(r) }, isLM); n > 0 {
		return n
	}
	isPS := func(r rune) bool { return isP(r) || isS(r) }
	if n := optRun(cp, p, e, isSpaceChar, isPS); n > 0 {
		return n + run(cp, p+n, e, isCRLF)
	}
	if isWS(c) {
		return newlineSpace(cp, p, e)
	}
	return 0
}

// Tekken (Mistral) letter classes: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]; they overlap on Lm, Lo and M.
func isTekUpper(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func isTekLower(r rune) bool {
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// isWordPrefix is [^\r\n\p{L}\p{N}].
func isWordPrefix(r rune) bool { return !isCRLF(r) && !isL(r) && !isN(r) }

// upperThenLower matches [U]*[L]+ at q, backtracking the greedy [U]* until
// [L]+ can match.
func upperThenLower(cp []rune, q, e int) int {
	k := run(cp, q, e, isTekUpper)
	for j := k; j >= 0; j-- {
		if q+j < e && isTekLower(cp[q+j]) {
			return j + run(cp, q+j, e, isTekLower)
		}
	}
	return 0
}

// upperRun matches [U]+[L]* at q.
func upperRun(cp []rune, q, e int) int {
	k := run(cp, q, e, isTekUpper)
	if k == 0 {
		return 0
	}
	return k + run(cp, q+k, e, isTekLower)
}

// withPrefix matches [^\r\n\p{L}\p{N}]?X, where core matches X.
func withPrefix(cp []rune, p, e int, core func(cp []rune, q, e int) int) int {
	if isWordPrefix(cp[p]) && p+1 < e {
		if n := core(cp, p+1, e); n > 0 {
			return 1 + n
		}
	}
	return core(cp, p, e)
}

// matchTekken is
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchTekken(cp []rune, p, e int) int {
	if n := withPrefix(cp, p, e, upperThenLower); n > 0 {
		return n
	}
	if n := withPrefix(cp, p, e, upperRun); n > 0 {
		return n
	}
	if isN(cp[p]) {
		return 1
	}
	if n := optRun(cp, p, e, isSpaceChar, isOther); n > 0 {
		return n + run(cp, p+n, e, func(r rune) bool { return isCRLF(r) || r == '/' })
	}
	return newlineSpace(cp, p, e)
}

// hasPrefixAt reports whether cp[p:e] starts with s (ASCII).
func hasPrefixAt(cp []rune, p, e int, s string) bool {
	if e-p < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if cp[p+i] != rune(s[i]) {
			return false
		}
	}
	return true
}

// matchSentinel is <sentinel:[0-9]+> (Chameleon).
func matchSentinel(cp []rune, p, e int) int {
	const pre = "<sentinel:"
	if !hasPrefixAt(cp, p, e, pre) {
		return 0
	}
	q := p + len(pre)
	n := run(cp, q, e, isASCIIDigit)
	if n == 0 || q+n >= e || cp[q+n] != '>' {
		return 0
	}
	return len(pre) + n + 1
}

// matchImage is (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z (Chameleon image tokens).
func matchImage(cp []rune, p, e int) int {
	if !hasPrefixAt(cp, p, e, "IMGIMG") {
		return 0
	}
	q := p + 6
	n := min(4, run(cp, q, e, func(r rune) bool { return r >= 'A' && r <= 'I' }))
	if n == 0 || q+n >= e || cp[q+n] != 'Z' {
		return 0
	}
	return 6 + n + 1
}

// matchTabSpaces is ([\t\n]|    |  ) (Chameleon).
func matchTabSpaces(cp []rune, p, e int) int {
	switch {
	case cp[p] == '\t' || cp[p] == '\n':
		return 1
	case hasPrefixAt(cp, p, e, "    "):
		return 4
	case hasPrefixAt(cp, p, e, "  "):
		return 2
	}
	return 0
}

// isChameleonPunct is [\p{P}!-/:-@\[-`{-~].
func isChameleonPunct(r rune) bool { return isDSV3Punct(r) || isP(r) }

// classMatch returns the matcher of [f] (one code point).
func classMatch(f func(rune) bool) matcher {
	return func(cp []rune, p, e int) int {
		if f(cp[p]) {
			return 1
		}
		return 0
	}
}

// runMatch returns the matcher of [f]+.
func runMatch(f func(rune) bool) matcher {
	return func(cp []rune, p, e int) int { return run(cp, p, e, f) }
}

// optRunMatch returns the matcher of lead?[f]+.
func optRunMatch(lead, f func(rune) bool) matcher {
	return func(cp []rune, p, e int) int { return optRun(cp, p, e, lead, f) }
}

// repeatMatch returns the matcher of [f]{1,max}.
func repeatMatch(f func(rune) bool, max int) matcher {
	return func(cp []rune, p, e int) int { return min(max, run(cp, p, e, f)) }
}

// matchThreeDigits is [0-9][0-9][0-9].
func matchThreeDigits(cp []rune, p, e int) int {
	if p+3 <= e && isASCIIDigit(cp[p]) && isASCIIDigit(cp[p+1]) && isASCIIDigit(cp[p+2]) {
		return 3
	}
	return 0
}

// splitTrailingSpace is the stage of \s+$ : the whitespace at the end of the
// piece becomes a piece of its own.
func splitTrailingSpace(cp []rune, s, e int, ends []int) []int {
	t := e
	for t > s && isWS(cp[t-1]) {
		t--
	}
	if t > s && t < e {
		ends = append(ends, t)
	}
	return append(ends, e)
}

// rangeClass is a character class given as inclusive code point ranges.
type rangeClass [][2]rune

func (c rangeClass) has(r rune) bool {
	for _, x := range c {
		if r >= x[0] && r <= x[1] {
			return true
		}
	}
	return false
}

// The character classes of the deepseek-llm and deepseek-coder regexes.
var (
	// [A-Za-zµÀ-ÖØ-öø-ƺ...]: the cased letters of many scripts.
	dsLetters = rangeClass{{0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
		{0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386},
		{0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
		{0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B},
		{0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D},
		{0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
		{0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
		{0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
		{0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D},
		{0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184},
		{0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
		{0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
		{0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
		{0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943}}
	// [!-/:-~！-／：-～‘-‟　-。]: ASCII punctuation (and, through :-~, letters),
	// full-width punctuation, quotation marks and CJK full stops.
	dsPunct = rangeClass{{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}}
	// [一-龥ࠀ-一가-퟿]: CJK ideographs, many other scripts, Hangul.
	dsCJK = rangeClass{{0x4E00, 0x9FA5}, {0x800, 0x4E00}, {0xAC00, 0xD7FF}}
	// [一-龥぀-ゟ゠-ヿ]: CJK ideographs, Hiragana, Katakana (deepseek-v3).
	dsV3CJK = rangeClass{{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}}
)

// isBloomWord is [^(\s|.,!?…。，、।۔،)].
func isBloomWord(r rune) bool {
	switch r {
	case '(', '|', '.', ',', '!', '?', '…', '。', '，', '、', '।', '۔', '،', ')':
		return false
	}
	return !isWS(r)
}

// isFalconPunct is [\p{P}\$\+<=>\^~\|`].
func isFalconPunct(r rune) bool {
	switch r {
	case '$', '+', '<', '=', '>', '^', '~', '|', '`':
		return true
	}
	return isP(r)
}

// isDefaultPunct is [\p{P}\$\+<=>\^~\|].
func isDefaultPunct(r rune) bool { return r != '`' && isFalconPunct(r) }

// newPreTokenizer returns the pre-tokenizer for a tokenizer.ggml.pre name,
// with the names the reference implementation accepts.
func newPreTokenizer(name string) (*preTokenizer, error) {
	pt := &preTokenizer{name: name}
	gpt2 := scan(matchGPT2)
	llama3 := scan(matchLlama3(3))
	switch name {
	case "", "default":
		pt.stages = []stage{scan(runMatch(isDefaultPunct)), gpt2, scan(runMatch(isN)), scan(matchThreeDigits)}
	case "llama3", "llama-v3", "llama-bpe", "falcon3":
		pt.stages = []stage{llama3}
		pt.ignoreMerges = true
	case "dbrx", "smaug-bpe", "chatglm-bpe":
		pt.stages = []stage{llama3}
	case "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez":
		pt.stages = []stage{scan(matchLlama3(1))}
	case "deepseek-llm":
		pt.stages = []stage{
			scan(classMatch(isCRLF)),
			scan(optRunMatch(isWS, dsLetters.has)),
			scan(optRunMatch(isWS, dsPunct.has)),
			splitTrailingSpace,
			scan(runMatch(dsCJK.has)),
			scan(runMatch(isN)),
		}
	case "deepseek-coder":
		pt.stages = []stage{
			scan(classMatch(isCRLF)),
			scan(optRunMatch(isWS, isL)),
			scan(optRunMatch(isWS, isP)),
			scan(runMatch(dsCJK.has)),
			scan(classMatch(isN)),
		}
	case "deepseek-v3":
		pt.stages = []stage{scan(repeatMatch(isN, 3)), scan(runMatch(dsV3CJK.has)), scan(matchDeepseekV3)}
	case "falcon":
		pt.stages = []stage{scan(runMatch(isFalconPunct)), gpt2, scan(matchThreeDigits)}
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		pt.stages = []stage{scan(classMatch(isN)), gpt2}
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
		"roberta-bpe", "mpt", "olmo", "jais":
		pt.stages = []stage{gpt2}
	case "poro-chat", "bloom", "gpt3-finnish":
		pt.stages = []stage{scan(optRunMatch(isSpaceChar, isBloomWord))}
	case "viking":
		pt.stages = []stage{scan(optRunMatch(isSpaceChar, isBloomWord)), scan(classMatch(isN))}
	case "tekken":
		pt.stages = []stage{scan(matchTekken)}
		pt.ignoreMerges = true
	case "chameleon":
		pt.stages = []stage{
			scan(matchSentinel),
			scan(matchImage),
			scan(matchTabSpaces),
			scan(classMatch(isN)),
			scan(classMatch(isChameleonPunct)),
			gpt2,
		}
	default:
		return nil, fmt.Errorf("tokenizer: unsupported pre-tokenizer %q", name)
	}
	return pt, nil
}

// decodeRunes decodes text into code points and their byte offsets
// (offs[i] is where cp[i] starts, offs[len(cp)] == len(text)). Each invalid
// byte becomes one U+FFFD code point that still covers its original byte, so
// no input byte is lost.
func decodeRunes(text string, cp []rune, offs []int) ([]rune, []int) {
	cp, offs = cp[:0], offs[:0]
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		cp = append(cp, r)
		offs = append(offs, i)
		i += n
	}
	offs = append(offs, len(text))
	return cp, offs
}

// split appends to words the byte end offsets of the words of text (the
// first word starts at 0). cp, offs, ends and tmp are scratch buffers.
func (pt *preTokenizer) split(text string, sc *scratch) []int {
	sc.cp, sc.offs = decodeRunes(text, sc.cp, sc.offs)
	ends := append(sc.ends[:0], len(sc.cp))
	for _, st := range pt.stages {
		next := sc.tmp[:0]
		s := 0
		for _, e := range ends {
			next = st(sc.cp, s, e, next)
			s = e
		}
		ends, sc.tmp = next, ends
	}
	// code point ends → byte ends
	for i, e := range ends {
		ends[i] = sc.offs[e]
	}
	sc.ends = ends
	return ends
}
