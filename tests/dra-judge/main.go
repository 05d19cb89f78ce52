// dra-judge: NVIDIA's DRA Driver for GPUs (sigs.k8s.io/dra-driver-nvidia-gpu) judges the opaque
// device configs gpufleet renders, with the driver's own code: the strict decoder its GPU kubelet plugin
// decodes claim parameters with, then Normalize and Validate as the plugin calls them at prepare.
//
// Input (stdin): a JSON list of {"name": "...", "parameters": {...}} (the opaque parameters of a claim's
// device config). FEATURE_GATES: the feature gates, in the form the driver's chart writes into that
// environment variable of the kubelet plugin ("A=true,B=false,"), set through the same flag value the
// driver's --feature-gates flag uses. Output (stdout): a JSON list of {"name", "kind", "accepted", "error"}.
// Exit 0 when every config was judged (accepted or not), 2 on bad input or gates.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"

	configapi "sigs.k8s.io/dra-driver-nvidia-gpu/api/nvidia.com/resource/v1beta1"
	"sigs.k8s.io/dra-driver-nvidia-gpu/pkg/featuregates"
)

type item struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

type verdict struct {
	Name     string `json:"name"`
	Kind     string `json:"kind,omitempty"`
	Accepted bool   `json:"accepted"`
	Error    string `json:"error,omitempty"`
}

// judge returns the decoded kind and the driver's refusal, if any.
func judge(raw []byte) (string, error) {
	obj, err := runtime.Decode(configapi.StrictDecoder, raw)
	if err != nil {
		return "", fmt.Errorf("error decoding config: %w", err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	var config configapi.Interface
	switch c := obj.(type) { // the kinds the GPU kubelet plugin prepares
	case *configapi.GpuConfig:
		config = c
	case *configapi.MigDeviceConfig:
		config = c
	case *configapi.VfioDeviceConfig:
		config = c
	default:
		return kind, fmt.Errorf("runtime object is not a recognized configuration: %T", obj)
	}
	if err := config.Normalize(); err != nil {
		return kind, fmt.Errorf("error normalizing config: %w", err)
	}
	if err := config.Validate(); err != nil {
		return kind, fmt.Errorf("error validating config: %w", err)
	}
	return kind, nil
}

func main() {
	if gates := os.Getenv("FEATURE_GATES"); gates != "" {
		if err := featuregates.FeatureGates().(pflag.Value).Set(gates); err != nil {
			fmt.Fprintf(os.Stderr, "dra-judge: FEATURE_GATES: %v\n", err)
			os.Exit(2)
		}
	}
	if err := featuregates.ValidateFeatureGates(); err != nil {
		fmt.Fprintf(os.Stderr, "dra-judge: FEATURE_GATES: %v\n", err)
		os.Exit(2)
	}
	var items []item
	if err := json.NewDecoder(os.Stdin).Decode(&items); err != nil {
		fmt.Fprintf(os.Stderr, "dra-judge: stdin: %v\n", err)
		os.Exit(2)
	}
	out := []verdict{}
	for _, it := range items {
		kind, err := judge(it.Parameters)
		v := verdict{Name: it.Name, Kind: kind, Accepted: err == nil}
		if err != nil {
			v.Error = err.Error()
		}
		out = append(out, v)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		os.Exit(2)
	}
}
