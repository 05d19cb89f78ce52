// Validate Kubernetes custom resources against the schemas generated from the real CRDs
// (@kubernetes-models/karpenter, @kubernetes-models/gke). Reads a JSON array of objects on stdin,
// prints a JSON array of {kind, name, ok, error} on stdout. Exit 0 unless the input is unreadable.
import { NodePool } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool";
import { EC2NodeClass } from "@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass";
import { ComputeClass } from "@kubernetes-models/gke/cloud.google.com/v1/ComputeClass";

const MODELS = {
  "karpenter.sh/v1/NodePool": NodePool,
  "karpenter.k8s.aws/v1/EC2NodeClass": EC2NodeClass,
  "cloud.google.com/v1/ComputeClass": ComputeClass,
};

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
      return { kind: key, name, ok: true, error: null };
    } catch (err) {
      return { kind: key, name, ok: false, error: String(err.message || err) };
    }
  });
  process.stdout.write(JSON.stringify(results));
});
