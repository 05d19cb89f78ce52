"""The Pod Security Standards "restricted" profile (Kubernetes 1.25+, "latest"), as the
PodSecurity admission plugin checks a pod spec.

No API server runs here, so this re-states the documented checks (kubernetes.io/docs/concepts/
security/pod-security-standards/) as code; it returns the violations in the admission's own words
where it has them ("allowPrivilegeEscalation != false", "runAsNonRoot != true", ...).
"""

BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def restricted_violations(pod_spec):
    spec = pod_spec or {}
    psc = spec.get("securityContext") or {}
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    out = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            out.append("host namespaces (%s=true)" % key)
    for vol in spec.get("volumes") or []:
        kinds = [k for k in vol if k != "name"]
        if "hostPath" in kinds:
            out.append("hostPath volumes")
        if not set(kinds) <= RESTRICTED_VOLUMES:
            out.append("restricted volume types (%s)" % ",".join(kinds))
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    pod_nonroot = psc.get("runAsNonRoot")
    if psc.get("runAsUser") == 0:
        out.append("runAsUser=0")
    for c in containers:
        sc = c.get("securityContext") or {}
        name = c.get("name")
        if sc.get("privileged"):
            out.append("privileged (container %s)" % name)
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append("allowPrivilegeEscalation != false (container %s)" % name)
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append("unrestricted capabilities (container %s must drop ALL)" % name)
        extra = set(caps.get("add") or []) - {"NET_BIND_SERVICE"}
        if extra:
            out.append("unrestricted capabilities (container %s adds %s)" % (name, ",".join(sorted(extra))))
        if set(caps.get("add") or []) - BASELINE_CAPS:
            out.append("non-default capabilities (container %s)" % name)
        nonroot = sc.get("runAsNonRoot", pod_nonroot)
        if nonroot is not True:
            out.append("runAsNonRoot != true (container %s)" % name)
        if sc.get("runAsUser") == 0:
            out.append("runAsUser=0 (container %s)" % name)
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append("seccompProfile (container %s must set RuntimeDefault or Localhost)" % name)
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                out.append("hostPort (container %s)" % name)
    return out
