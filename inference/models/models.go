// Package models fetches model files: a catalogue of GGUF models known to
// run well on a Raspberry Pi, and Download, which fetches a file over HTTP
// with resume, SHA-256 verification and an atomic rename into place.
package models

import (
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
// both, and a changed upstream file fails loudly rather than silently.
var catalogue = [...]Model{
	{
		Name:        "smollm2-360m",
		Description: "SmolLM2 360M Instruct, Q8_0: the smallest, for a Pi Zero 2 or a Pi 3",
		Repo:        "HuggingFaceTB/SmolLM2-360M-Instruct-GGUF",
		File:        "smollm2-360m-instruct-q8_0.gguf",
		Size:        386404992,
		SHA256:      "48ab3034d0dd401fbc721eb1df3217902fee7dab9078992d66431f09b7750201",
		License:     "Apache-2.0",
	},
	{
		Name:        "qwen2.5-0.5b",
		Description: "Qwen2.5 0.5B Instruct, Q4_K_M: small and multilingual, tool calls",
		Repo:        "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
		File:        "qwen2.5-0.5b-instruct-q4_k_m.gguf",
		Size:        491400032,
		SHA256:      "74a4da8c9fdbcd15bd1f6d01d621410d31c6fc00986f5eb687824e7b93d7a9db",
		License:     "Apache-2.0",
	},
	{
		Name:        "tinyllama-1.1b",
		Description: "TinyLlama 1.1B Chat v1.0, Q4_K_M: English chat",
		Repo:        "TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF",
		File:        "tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf",
		Size:        668788096,
		SHA256:      "9fecc3b3cd76bba89d504f29b616eedf7da85b96540e490ca5824d3f7d2776a0",
		License:     "Apache-2.0",
	},
	{
		Name:        "llama3.2-1b",
		Description: "Llama 3.2 1B Instruct, Q4_K_M (bartowski's quantisation): good instruction following",
		Repo:        "bartowski/Llama-3.2-1B-Instruct-GGUF",
		File:        "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
		Size:        807694464,
		SHA256:      "6f85a640a97cf2bf5b8e764087b1e83da0fdb51d7c9fab7d0fece9385611df83",
		License:     "Llama 3.2 Community License",
	},
	{
		Name:        "qwen2.5-1.5b",
		Description: "Qwen2.5 1.5B Instruct, Q4_K_M: the best answers here, for a Pi 4 or 5 with 2 GB or more",
		Repo:        "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
		File:        "qwen2.5-1.5b-instruct-q4_k_m.gguf",
		Size:        1117320736,
		SHA256:      "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
		License:     "Apache-2.0",
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
