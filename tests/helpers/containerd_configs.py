"""Generated containerd user configs (hypothesis): the way people write them, comments above and beside
keys, indented or flat tables, registry mirrors, extra runtimes, runc with or without options, top-level
keys, existing imports. Shared by tests/unit/test_containerd_config_properties.py and the real-binary
check in tests/integration/test_containerd_real.py. Draws (config version, text)."""
from hypothesis import strategies as st

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
comment_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.:-=[]\"'#", min_size=0, max_size=30)

# A kubeadm-style user config (config version 2): systemd cgroups, a second runtime, a registry mirror and
# comments to keep. Shared by tests/unit/test_containerd_config.py and the nvidia-ctk comparison.
USER_V2 = """version = 2

# Site registry mirror: keep this comment.
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"  # pinned
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
        runtime_type = "io.containerd.kata.v2"
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
      endpoint = ["https://mirror.example.internal"]
"""


@st.composite
def user_configs(draw):
    version = draw(st.sampled_from([1, 2, 3, 4]))
    cri = ".".join('"%s"' % k if "." in k else k for k in ctoml.cri_path(version))
    indent = draw(st.sampled_from(["", "  ", "    "]))
    lines = []

    def comment():
        if draw(st.booleans()):
            lines.append("# " + draw(comment_text))

    comment()
    if version > 1:
        lines.append("version = %d" % version)
    if draw(st.booleans()):
        lines.append("oom_score = %d  # %s" % (draw(st.integers(-999, 0)), draw(comment_text)))
    if draw(st.booleans()):
        lines.append('imports = ["/etc/containerd/site.d/*.toml"]')
    lines.append("")
    comment()
    lines.append("[%s]" % cri)
    lines.append('%ssandbox_image = "registry.example/pause:%d"' % (indent, draw(st.integers(1, 9))))
    comment()
    default = draw(st.sampled_from(["runc", "runc", "crun", None]))
    runtimes = draw(st.lists(names.filter(lambda n: n not in ("runc", "nvidia", "crun")), max_size=3, unique=True))
    has_runc = draw(st.booleans()) or default == "crun"
    lines.append("[%s.containerd]" % cri)
    if default:
        lines.append('%sdefault_runtime_name = "%s"' % (indent, default))
    if default == "crun":
        lines.append("[%s.containerd.runtimes.crun]" % cri)
        lines.append('%sruntime_type = "io.containerd.runc.v2"' % (indent * 2))
        lines.append("[%s.containerd.runtimes.crun.options]" % cri)
        lines.append('%sBinaryName = "/usr/bin/crun"' % (indent * 3))
    if has_runc:
        lines.append("%s[%s.containerd.runtimes.runc]" % (indent, cri))
        comment()
        lines.append('%sruntime_type = "io.containerd.runc.v2"' % (indent * 2))
        if draw(st.booleans()):
            lines.append("%s[%s.containerd.runtimes.runc.options]" % (indent, cri))
            lines.append("%sSystemdCgroup = %s" % (indent * 3, draw(st.sampled_from(["true", "false"]))))
    for name in runtimes:
        lines.append("%s[%s.containerd.runtimes.%s]" % (indent, cri, name))
        lines.append('%sruntime_type = "io.containerd.%s.v2"  # %s' % (indent * 2, name, draw(comment_text)))
    for host in draw(st.lists(names, max_size=2, unique=True)):
        comment()
        if version <= 2:
            lines.append('%s[%s.registry.mirrors."%s.example"]' % (indent, cri, host))
            lines.append('%sendpoint = ["https://%s.mirror.internal"]' % (indent * 2, host))
        else:
            lines.append('%s[plugins."io.containerd.cri.v1.images".registry.mirrors."%s.example"]' % (indent, host))
            lines.append('%sendpoint = ["https://%s.mirror.internal"]' % (indent * 2, host))
    if draw(st.booleans()):
        lines.append("")
        lines.append("[metrics]")
        lines.append('  address = "127.0.0.1:%d"' % draw(st.integers(1024, 65000)))
    comment()
    return version, "\n".join(lines) + "\n"
