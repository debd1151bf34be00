// Package models fetches model files: a catalogue of GGUF models known to
// run well on a Raspberry Pi, and Download, which fetches a file over HTTP
// with resume, SHA-256 verification and an atomic rename into place.
package models

import (
	"fmt"
	"net/url"
	"strings"
)

// Model is a GGUF file of the catalogue, hosted on Hugging Face.
type Model struct {
	// Name is the short name `edgellm pull` takes, e.g. "qwen2.5-0.5b".
	Name string
	// Description says what the model is, its quantisation and its use.
	Description string
	// Repo is the Hugging Face repository, "owner/name".
	Repo string
	// File is the file name in the repository, also the local file name.
	File string
	// Size is the file's size in bytes (0 when not known).
	Size int64
	// SHA256 is the file's SHA-256 in lower-case hex, as Hugging Face lists
	// it for the LFS object ("" when not known: the download is then checked
	// only by parsing its GGUF header).
	SHA256 string
	// License names the model's licence.
	License string
	// Quant is the file's quantisation as llama-quantize names it, e.g.
	// "Q4_K_M".
	Quant string
	// Shape is the name of the synthetic model with the same tensors
	// (`edgellm synth --shape`), to benchmark before downloading.
	Shape string
	// MinRAM is the smallest Raspberry Pi memory, in MiB (one of piRAM), that
	// holds the file, the KV cache of FitContext tokens and PiReserve.
	MinRAM int
}

// piRAM are the memory sizes, in MiB, of the Raspberry Pi boards edgellm is
// for: the Pi Zero 2 W (512 MB) and the Pi 4 and Pi 5 (1 to 16 GB).
var piRAM = [...]int{512, 1024, 2048, 4096, 8192, 16384}

// What a model needs besides its file to fit a board: the KV cache of
// FitContext tokens (the daemon's default context) and PiReserve bytes for the
// kernel, the GPU's share, Raspberry Pi OS Lite and the daemon's own buffers.
const (
	FitContext = 2048
	PiReserve  = 192 << 20
)

// Boards says which Raspberry Pi boards the model fits, e.g. "Pi 4/5 with
// 2 GB or more".
func (m Model) Boards() string {
	switch {
	case m.MinRAM <= 512:
		return "Pi Zero 2 W (512 MB), Pi 4/5"
	case m.MinRAM >= piRAM[len(piRAM)-1]:
		return fmt.Sprintf("Pi 5 with %d GB", m.MinRAM>>10)
	}
	return fmt.Sprintf("Pi 4/5 with %d GB or more", m.MinRAM>>10)
}

// DefaultEndpoint is the Hugging Face site the files are fetched from.
const DefaultEndpoint = "https://huggingface.co"

// URL is where the file is downloaded from: the repository's main branch
// through Hugging Face's resolve endpoint (which redirects to its CDN).
func (m Model) URL() string { return m.URLAt(DefaultEndpoint) }

// URLAt is URL on another endpoint: a Hugging Face mirror with the same
// layout (what the HF_ENDPOINT environment variable names for Hugging
// Face's own tools).
func (m Model) URLAt(endpoint string) string {
	return strings.TrimRight(endpoint, "/") + "/" + m.Repo + "/resolve/main/" + url.PathEscape(m.File)
}

// catalogue lists the known models, smallest first. Sizes and hashes are
// those Hugging Face publishes for the LFS objects on the main branch. Each
// pair was cross-checked against at least two independent public records of
// the same file (manifests quoting Hugging Face's LFS metadata); huggingface.co
// itself could not be reached when the list was written. Download checks
// both, and a changed upstream file fails loudly rather than silently. Where
// a model's publisher put out a GGUF (Qwen, LiquidAI, ggml-org for Gemma 3 and
// SmolLM3), the file is theirs; otherwise it is unsloth's or bartowski's.
var catalogue = [...]Model{
	{
		Name:        "lfm2-350m",
		Description: "LFM2 350M, Q4_K_M (LiquidAI's quantisation): fast hybrid of short convolutions and attention, small KV cache",
		Repo:        "LiquidAI/LFM2-350M-GGUF",
		File:        "LFM2-350M-Q4_K_M.gguf",
		Size:        229309376,
		SHA256:      "a4d000c7064bd3b2e42c6845836286a899a4e79cf1791da1a6797b58d575957d",
		License:     "LFM Open License v1.0",
		Quant:       "Q4_K_M",
		Shape:       "lfm2-350m",
		MinRAM:      512,
	},
	{
		Name:        "gemma3-270m",
		Description: "Gemma 3 270M instruct, Q4_K_M (unsloth's quantisation): the fewest weights, for short instructions",
		Repo:        "unsloth/gemma-3-270m-it-GGUF",
		File:        "gemma-3-270m-it-Q4_K_M.gguf",
		Size:        253115424,
		SHA256:      "b1baabd6b729e4041822220d3e648e00d99cac5df86b10dffb77bcccf0688e39",
		License:     "Gemma Terms of Use",
		Quant:       "Q4_K_M",
		Shape:       "gemma3-270m",
		MinRAM:      512,
	},
	{
		Name:        "gemma3-270m-q8_0",
		Description: "Gemma 3 270M instruct, Q8_0 (ggml-org's quantisation)",
		Repo:        "ggml-org/gemma-3-270m-it-GGUF",
		File:        "gemma-3-270m-it-Q8_0.gguf",
		Size:        291545600,
		SHA256:      "0ef57d2c838458a1952664260dcba38e5bdda37494f3af732f06e4add24068e3",
		License:     "Gemma Terms of Use",
		Quant:       "Q8_0",
		Shape:       "gemma3-270m",
		MinRAM:      512,
	},
	{
		// One public record gives the size; the Q4_K_M file's header is
		// exactly as long (2383808 bytes), as it must be for two files of one
		// conversion, when both are checked against synth's tensor sizes.
		Name:        "lfm2-350m-q8_0",
		Description: "LFM2 350M, Q8_0 (LiquidAI's quantisation)",
		Repo:        "LiquidAI/LFM2-350M-GGUF",
		File:        "LFM2-350M-Q8_0.gguf",
		Size:        379214784,
		SHA256:      "b7bfeab6495a1ae3ae78811c1297df9f301b35261ff9580d42fb30dc4dc9034b",
		License:     "LFM Open License v1.0",
		Quant:       "Q8_0",
		Shape:       "lfm2-350m",
		MinRAM:      1024,
	},
	{
		Name:        "smollm2-360m",
		Description: "SmolLM2 360M Instruct, Q8_0: small English chat",
		Repo:        "HuggingFaceTB/SmolLM2-360M-Instruct-GGUF",
		File:        "smollm2-360m-instruct-q8_0.gguf",
		Size:        386404992,
		SHA256:      "48ab3034d0dd401fbc721eb1df3217902fee7dab9078992d66431f09b7750201",
		License:     "Apache-2.0",
		Quant:       "Q8_0",
		Shape:       "smollm-360m",
		MinRAM:      1024,
	},
	{
		Name:        "qwen3-0.6b",
		Description: "Qwen3 0.6B, Q4_K_M (unsloth's quantisation): multilingual, thinking and non-thinking modes, tool calls",
		Repo:        "unsloth/Qwen3-0.6B-GGUF",
		File:        "Qwen3-0.6B-Q4_K_M.gguf",
		Size:        396705472,
		SHA256:      "ac2d97712095a558e31573f62f466a3f9d93990898b0ec79d7c974c1780d524a",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen3-0.6b",
		MinRAM:      1024,
	},
	{
		Name:        "qwen2.5-0.5b",
		Description: "Qwen2.5 0.5B Instruct, Q4_K_M: small and multilingual, tool calls",
		Repo:        "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
		File:        "qwen2.5-0.5b-instruct-q4_k_m.gguf",
		Size:        491400032,
		SHA256:      "74a4da8c9fdbcd15bd1f6d01d621410d31c6fc00986f5eb687824e7b93d7a9db",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen2.5-0.5b",
		MinRAM:      1024,
	},
	{
		// Size and hash as pinned by several independent public manifests
		// of unsloth/Qwen3.5-0.8B-GGUF (app catalogues, checksum lists).
		// unsloth's Q4_K_M is not llama-quantize's plain mix: the file holds
		// more than the synth twin's tensor data and a header.
		Name:        "qwen3.5-0.8b",
		Description: "Qwen3.5 0.8B, Q4_K_M (unsloth's quantisation): Gated DeltaNet hybrid, fixed-size state in three of four layers, thinking and non-thinking modes",
		Repo:        "unsloth/Qwen3.5-0.8B-GGUF",
		File:        "Qwen3.5-0.8B-Q4_K_M.gguf",
		Size:        532517120,
		SHA256:      "bd258782e35f7f458f8aced1adc053e6e92e89bc735ba3be89d38a06121dc517",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen3.5-0.8b",
		MinRAM:      1024,
	},
	{
		Name:        "qwen3-0.6b-q8_0",
		Description: "Qwen3 0.6B, Q8_0 (Qwen's own GGUF)",
		Repo:        "Qwen/Qwen3-0.6B-GGUF",
		File:        "Qwen3-0.6B-Q8_0.gguf",
		Size:        639446688,
		SHA256:      "9465e63a22add5354d9bb4b99e90117043c7124007664907259bd16d043bb031",
		License:     "Apache-2.0",
		Quant:       "Q8_0",
		Shape:       "qwen3-0.6b",
		MinRAM:      2048,
	},
	{
		Name:        "tinyllama-1.1b",
		Description: "TinyLlama 1.1B Chat v1.0, Q4_K_M: English chat",
		Repo:        "TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF",
		File:        "tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf",
		Size:        668788096,
		SHA256:      "9fecc3b3cd76bba89d504f29b616eedf7da85b96540e490ca5824d3f7d2776a0",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "tinyllama-1.1b",
		MinRAM:      1024,
	},
	{
		Name:        "lfm2-1.2b",
		Description: "LFM2 1.2B, Q4_K_M (LiquidAI's quantisation): good answers for a small KV cache (6 of 16 layers attend)",
		Repo:        "LiquidAI/LFM2-1.2B-GGUF",
		File:        "LFM2-1.2B-Q4_K_M.gguf",
		Size:        730893248,
		SHA256:      "55175400e3f509a9616227afeffd58d87e80b9f628a5d3d54ada884d85221fed",
		License:     "LFM Open License v1.0",
		Quant:       "Q4_K_M",
		Shape:       "lfm2-1.2b",
		MinRAM:      1024,
	},
	{
		Name:        "gemma3-1b",
		Description: "Gemma 3 1B instruct, Q4_K_M (ggml-org's quantisation): multilingual",
		Repo:        "ggml-org/gemma-3-1b-it-GGUF",
		File:        "gemma-3-1b-it-Q4_K_M.gguf",
		Size:        806058240,
		SHA256:      "8ccc5cd1f1b3602548715ae25a66ed73fd5dc68a210412eea643eb20eb75a135",
		License:     "Gemma Terms of Use",
		Quant:       "Q4_K_M",
		Shape:       "gemma3-1b",
		MinRAM:      1024,
	},
	{
		Name:        "llama3.2-1b",
		Description: "Llama 3.2 1B Instruct, Q4_K_M (bartowski's quantisation): good instruction following",
		Repo:        "bartowski/Llama-3.2-1B-Instruct-GGUF",
		File:        "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
		Size:        807694464,
		SHA256:      "6f85a640a97cf2bf5b8e764087b1e83da0fdb51d7c9fab7d0fece9385611df83",
		License:     "Llama 3.2 Community License",
		Quant:       "Q4_K_M",
		Shape:       "llama-3.2-1b",
		MinRAM:      2048,
	},
	{
		Name:        "gemma3-1b-q8_0",
		Description: "Gemma 3 1B instruct, Q8_0 (ggml-org's quantisation)",
		Repo:        "ggml-org/gemma-3-1b-it-GGUF",
		File:        "gemma-3-1b-it-Q8_0.gguf",
		Size:        1069306368,
		SHA256:      "b205840c5dcef55078e37d344677869a714ffd42a4ae448c48dcfb52e4bb10d5",
		License:     "Gemma Terms of Use",
		Quant:       "Q8_0",
		Shape:       "gemma3-1b",
		MinRAM:      2048,
	},
	{
		Name:        "qwen3-1.7b",
		Description: "Qwen3 1.7B, Q4_K_M (unsloth's quantisation): multilingual, thinking and non-thinking modes, tool calls",
		Repo:        "unsloth/Qwen3-1.7B-GGUF",
		File:        "Qwen3-1.7B-Q4_K_M.gguf",
		Size:        1107409472,
		SHA256:      "b139949c5bd74937ad8ed8c8cf3d9ffb1e99c866c823204dc42c0d91fa181897",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen3-1.7b",
		MinRAM:      2048,
	},
	{
		Name:        "qwen2.5-1.5b",
		Description: "Qwen2.5 1.5B Instruct, Q4_K_M: good answers, multilingual",
		Repo:        "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
		File:        "qwen2.5-1.5b-instruct-q4_k_m.gguf",
		Size:        1117320736,
		SHA256:      "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen2.5-1.5b",
		MinRAM:      2048,
	},
	{
		// As qwen3.5-0.8b; unsloth's BF16 file of the same revision is
		// 3775709216 bytes, which puts the header at 10961696 bytes and this
		// file's tensor data about 6.4 MB above llama-quantize's Q4_K_M mix.
		Name:        "qwen3.5-2b",
		Description: "Qwen3.5 2B, Q4_K_M (unsloth's quantisation): Gated DeltaNet hybrid, fixed-size state in three of four layers, thinking and non-thinking modes",
		Repo:        "unsloth/Qwen3.5-2B-GGUF",
		File:        "Qwen3.5-2B-Q4_K_M.gguf",
		Size:        1280835840,
		SHA256:      "aaf42c8b7c3cab2bf3d69c355048d4a0ee9973d48f16c731c0520ee914699223",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen3.5-2b",
		MinRAM:      2048,
	},
	{
		Name:        "qwen3-1.7b-q8_0",
		Description: "Qwen3 1.7B, Q8_0 (Qwen's own GGUF)",
		Repo:        "Qwen/Qwen3-1.7B-GGUF",
		File:        "Qwen3-1.7B-Q8_0.gguf",
		Size:        1834426016,
		SHA256:      "061b54daade076b5d3362dac252678d17da8c68f07560be70818cace6590cb1a",
		License:     "Apache-2.0",
		Quant:       "Q8_0",
		Shape:       "qwen3-1.7b",
		MinRAM:      4096,
	},
	{
		Name:        "smollm3-3b",
		Description: "SmolLM3 3B, Q4_K_M (ggml-org's quantisation): reasoning on or off, six European languages",
		Repo:        "ggml-org/SmolLM3-3B-GGUF",
		File:        "SmolLM3-Q4_K_M.gguf",
		Size:        1915305312,
		SHA256:      "8334b850b7bd46238c16b0c550df2138f0889bf433809008cc17a8b05761863e",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "smollm3-3b",
		MinRAM:      4096,
	},
	{
		Name:        "phi4-mini",
		Description: "Phi-4-mini-instruct 3.8B, Q4_K_M (unsloth's quantisation): reasoning and maths for its size",
		Repo:        "unsloth/Phi-4-mini-instruct-GGUF",
		File:        "Phi-4-mini-instruct-Q4_K_M.gguf",
		Size:        2491874272,
		SHA256:      "88c00229914083cd112853aab84ed51b87bdf6b9ce42f532d8c85c7c63b1730a",
		License:     "MIT",
		Quant:       "Q4_K_M",
		Shape:       "phi4-mini",
		MinRAM:      4096,
	},
	{
		Name:        "qwen3-4b",
		Description: "Qwen3 4B Instruct 2507, Q4_K_M (unsloth's quantisation): the best answers here, no thinking mode",
		Repo:        "unsloth/Qwen3-4B-Instruct-2507-GGUF",
		File:        "Qwen3-4B-Instruct-2507-Q4_K_M.gguf",
		Size:        2497281120,
		SHA256:      "3605803b982cb64aead44f6c1b2ae36e3acdb41d8e46c8a94c6533bc4c67e597",
		License:     "Apache-2.0",
		Quant:       "Q4_K_M",
		Shape:       "qwen3-4b",
		MinRAM:      4096,
	},
	{
		Name:        "smollm3-3b-q8_0",
		Description: "SmolLM3 3B, Q8_0 (ggml-org's quantisation)",
		Repo:        "ggml-org/SmolLM3-3B-GGUF",
		File:        "SmolLM3-Q8_0.gguf",
		Size:        3275574624,
		SHA256:      "8aa8cc74656137174a1988d993b00828e65a86fd68773412b632a75aa1373248",
		License:     "Apache-2.0",
		Quant:       "Q8_0",
		Shape:       "smollm3-3b",
		MinRAM:      4096,
	},
	{
		Name:        "phi4-mini-q8_0",
		Description: "Phi-4-mini-instruct 3.8B, Q8_0 (unsloth's quantisation)",
		Repo:        "unsloth/Phi-4-mini-instruct-GGUF",
		File:        "Phi-4-mini-instruct.Q8_0.gguf",
		Size:        4084611040,
		SHA256:      "26188c6050d525376a88b04514c236c5e28a36730f1e936f2a00314212b7ba42",
		License:     "MIT",
		Quant:       "Q8_0",
		Shape:       "phi4-mini",
		MinRAM:      8192,
	},
	{
		Name:        "qwen3-4b-q8_0",
		Description: "Qwen3 4B Instruct 2507, Q8_0 (unsloth's quantisation)",
		Repo:        "unsloth/Qwen3-4B-Instruct-2507-GGUF",
		File:        "Qwen3-4B-Instruct-2507-Q8_0.gguf",
		Size:        4280405600,
		SHA256:      "391c1e410fd9f4cf2de2b510273b56a84c19ce18f4fa3bfb3774031dac4ef068",
		License:     "Apache-2.0",
		Quant:       "Q8_0",
		Shape:       "qwen3-4b",
		MinRAM:      8192,
	},
}

// Catalogue returns the known models, smallest first.
func Catalogue() []Model {
	out := make([]Model, len(catalogue))
	copy(out, catalogue[:])
	return out
}

// Lookup finds a known model by its name or its file name, ignoring case.
func Lookup(name string) (Model, bool) {
	for _, m := range catalogue {
		if strings.EqualFold(name, m.Name) || strings.EqualFold(name, m.File) {
			return m, true
		}
	}
	return Model{}, false
}
