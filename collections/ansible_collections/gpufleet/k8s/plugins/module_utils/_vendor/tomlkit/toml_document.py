from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.container import Container


class TOMLDocument(Container):
    """
    A TOML document.
    """
