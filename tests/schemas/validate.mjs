// Validate Kubernetes custom resources against the schemas generated from the real CRDs
// (@kubernetes-models/karpenter, @kubernetes-models/gke). Reads a JSON array of objects on stdin,
// prints a JSON array of {kind, name, ok, error} on stdout. Exit 0 unless the input is unreadable.
//
// Overlay: @kubernetes-models/gke 4.6.2 predates ComputeClass priorities[].gpu.gpuSharing (GKE
// 1.35.2-gke.1485000). overlays/computeclass-gpusharing.json (hand-written from the CRD reference,
// source URL inside) checks that one object strictly, with ajv, the validator the generated models use
// (installed with them, pinned by package-lock.json). Nothing else of the package's schema changes.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import { NodePool } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool";
import { NodeOverlay } from "@kubernetes-models/karpenter/karpenter.sh/v1alpha1/NodeOverlay";
import { EC2NodeClass } from "@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass";
import { ComputeClass } from "@kubernetes-models/gke/cloud.google.com/v1/ComputeClass";

const MODELS = {
  "karpenter.sh/v1/NodePool": NodePool,
  "karpenter.sh/v1alpha1/NodeOverlay": NodeOverlay,
  "karpenter.k8s.aws/v1/EC2NodeClass": EC2NodeClass,
  "cloud.google.com/v1/ComputeClass": ComputeClass,
};

const GPU_SHARING = new Ajv({ allErrors: true, strict: false }).compile(
  JSON.parse(readFileSync(new URL("./overlays/computeclass-gpusharing.json", import.meta.url), "utf8")));

// Errors of the gpuSharing overlay for one ComputeClass ("" when none).
function gpuSharingErrors(obj) {
  const priorities = (obj.spec && Array.isArray(obj.spec.priorities)) ? obj.spec.priorities : [];
  const out = [];
  priorities.forEach((priority, index) => {
    const gpu = priority && priority.gpu;
    if (!gpu || gpu.gpuSharing === undefined) return;
    if (!GPU_SHARING(gpu.gpuSharing)) {
      for (const err of GPU_SHARING.errors) {
        const extra = err.params && err.params.additionalProperty ? ` (${err.params.additionalProperty})` : "";
        const allowed = err.params && err.params.allowedValues ? ` (${err.params.allowedValues.join(", ")})` : "";
        out.push(`data/spec/priorities/${index}/gpu/gpuSharing${err.instancePath} ${err.message}${extra}${allowed}`);
      }
    }
  });
  return out.join(", ");
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const objects = JSON.parse(input);
  const results = objects.map((obj) => {
    const key = `${obj.apiVersion}/${obj.kind}`;
    const name = obj.metadata && obj.metadata.name;
    const Model = MODELS[key];
    if (!Model) {
      return { kind: key, name, ok: false, error: `no schema for ${key}` };
    }
    try {
      new Model(obj).validate();
      const overlay = key === "cloud.google.com/v1/ComputeClass" ? gpuSharingErrors(obj) : "";
      if (overlay) {
        return { kind: key, name, ok: false, error: `gpuSharing overlay: ${overlay}` };
      }
      return { kind: key, name, ok: true, error: null };
    } catch (err) {
      return { kind: key, name, ok: false, error: String(err.message || err) };
    }
  });
  process.stdout.write(JSON.stringify(results));
});
