// Validate ServiceMonitor, PrometheusRule, Argo CD Application and Flux objects against the prometheus-operator schema of
// @kubernetes-models/prometheus-operator. Reads a JSON array of objects on stdin; prints one
// line per object ("ok KIND/NAME" or "invalid KIND/NAME: reason") and exits 1 if any is invalid.
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";

import { Application } from "@kubernetes-models/argo-cd/argoproj.io/v1alpha1/Application";
import { Kustomization } from "@kubernetes-models/flux-cd/kustomize.toolkit.fluxcd.io/v1/Kustomization";
import { HelmRelease } from "@kubernetes-models/flux-cd/helm.toolkit.fluxcd.io/v2/HelmRelease";
import { HelmRepository } from "@kubernetes-models/flux-cd/source.toolkit.fluxcd.io/v1/HelmRepository";

const kinds = { ServiceMonitor, PrometheusRule, Application, Kustomization, HelmRelease, HelmRepository };
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  let failed = 0;
  for (const obj of JSON.parse(input)) {
    const name = `${obj.kind}/${obj.metadata && obj.metadata.name}`;
    const Model = kinds[obj.kind];
    if (!Model) {
      console.log(`invalid ${name}: no schema for kind ${obj.kind}`);
      failed += 1;
      continue;
    }
    try {
      new Model(obj).validate();
      console.log(`ok ${name}`);
    } catch (err) {
      console.log(`invalid ${name}: ${err.message}`);
      failed += 1;
    }
  }
  process.exit(failed ? 1 : 0);
});
