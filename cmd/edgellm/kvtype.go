package main

import (
	"flag"
	"strings"

	"github.com/edgellm/edgellm/inference"
)

// kvTypeFlag adds --kv-type to a command that runs or describes a model at
// a context; parse its value with kvTypeOf.
func kvTypeFlag(fs *flag.FlagSet) *string {
	return fs.String("kv-type", "f16", "KV cache `TYPE`: "+strings.Join(inference.KVTypeNames(), " or ")+
		" (q8_0: 34/64 of the memory, keys and values in 8 bits; llama.cpp's -ctk q8_0 -ctv q8_0)")
}

// kvTypeOf parses a --kv-type value; a bad one is a usage error.
func kvTypeOf(name string) (inference.KVType, error) {
	kv, err := inference.ParseKVType(name)
	if err != nil {
		return 0, usagef("--kv-type: %v", err)
	}
	return kv, nil
}
