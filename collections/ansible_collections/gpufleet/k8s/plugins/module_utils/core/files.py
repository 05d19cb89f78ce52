# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""gpufleet's one file-writing path: plan (only what differs), diff, write atomically.

Standard library only, so modules that run on the nodes (node_stamp) use it as well as the
controller-side renderers (render.py re-exports it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import os
import shutil
import tempfile

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError


# Symbolic links in gpufleet's output (issue 30 item 4): git stores links and GitOps users commit
# build/, so a cloned or pulled build tree can hold one. Following it would write, read or delete in
# its target (a render once emptied the folder a link named gitops pointed to). The build-tree
# writers below refuse instead, naming the link, before anything changes.
LINK_ADVICE = ("gpufleet never writes, reads or deletes through a symbolic link in its output; remove the link "
               "(the next run recreates what belongs there) or replace it by a real directory")


def first_link(path):
    """The first component of ``path`` (made absolute), from the root down, that is a symbolic link;
    None when there is none (a component that does not exist ends the search)."""
    current = os.sep
    for part in os.path.abspath(path).split(os.sep):
        if not part:
            continue
        current = os.path.join(current, part)
        if os.path.islink(current):
            return current
        if not os.path.exists(current):
            return None
    return None


def links_under(root):
    """The symbolic links at or below ``root`` (never followed), as paths relative to ``root``
    (``.``: ``root`` itself), sorted."""
    if os.path.islink(root):
        return ["."]
    out = []
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            if os.path.islink(os.path.join(dirpath, name)):
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


def link_message(path):
    """``path`` is a symbolic link: what it points to and what to do."""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return "%s is a symbolic link (to %s); %s" % (path, target, LINK_ADVICE)


def refuse_links(dest, names=(), tree=False):
    """Raise GpufleetError naming the first symbolic link on the way to ``dest``, on the way from
    ``dest`` to any of ``names`` (relative), or, with ``tree``, anywhere below ``dest``."""
    found = first_link(dest)
    for name in names:
        if found:
            break
        found = first_link(os.path.join(dest, name))
    if not found and tree and os.path.isdir(dest):
        below = links_under(dest)
        found = os.path.join(dest, below[0]) if below else None
    if found:
        raise GpufleetError(link_message(found))


def read_text(path):
    """The file's text, or None when it does not exist (other errors, e.g. a directory, raise)."""
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise


def plan_files(dest, wanted, modes=None):
    """{filename: (current text or None, wanted text)} for the files of ``wanted`` whose content
    (or, with ``modes`` {filename: mode}, permission bits; default 0644) differs."""
    writes = {}
    for name, text in wanted.items():
        path = os.path.join(dest, name)
        current = read_text(path)
        mode = (modes or {}).get(name, 0o644)
        if current != text or (current is not None and (os.stat(path).st_mode & 0o777) != mode):
            writes[name] = (current, text)
    return writes


def file_diffs(dest, writes, removes=()):
    """Ansible ``diff`` entries for planned writes and removals (names relative to ``dest``)."""
    out = [dict(before=old or "", after=new, before_header=os.path.join(dest, name), after_header=os.path.join(dest, name))
           for name, (old, new) in sorted(writes.items())]
    out += [dict(before="(file)", after="", before_header=os.path.join(dest, name), after_header="(removed)")
            for name in removes]
    return out


def change_diffs(changes):
    """Ansible ``diff`` entries for ``{path: (old or None, new or None)}`` (None: absent)."""
    return [dict(before=old or "", after=new or "", before_header=path if old is not None else "(absent)",
                 after_header=path if new is not None else "(absent)")
            for path, (old, new) in sorted(changes.items())]


def write_file(path, text, mode=None, backup_suffix=None):
    """Write ``text`` (str, or bytes written as they are) to ``path`` atomically (temporary file in the
    same directory, fsync, rename).

    ``mode``: permission bits (None: keep the existing file's, 0644 for a new file). With
    ``backup_suffix``, an existing file is first copied to ``path + backup_suffix``. Returns the
    backup's path, or None."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    saved = None
    if os.path.exists(path):
        if mode is None:
            mode = os.stat(path).st_mode & 0o7777
        if backup_suffix:
            saved = path + backup_suffix
            shutil.copy2(path, saved)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-gpufleet-", dir=directory)
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644 if mode is None else mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return saved


def remove_file(path, backup_suffix=None):
    """Remove ``path`` (after a copy to ``path + backup_suffix`` when given); returns the backup's path or None."""
    saved = None
    if backup_suffix:
        saved = path + backup_suffix
        shutil.copy2(path, saved)
    os.unlink(path)
    return saved


def write_planned(dest, writes, removes, modes=None):
    """Write each planned file of ``plan_files`` under ``dest`` (mode from ``modes``, default 0644),
    then remove ``removes`` (names relative to ``dest``); ``dest`` is created when missing."""
    if not os.path.isdir(dest):
        os.makedirs(dest)
    for name, (_old, text) in sorted(writes.items()):
        write_file(os.path.join(dest, name), text, (modes or {}).get(name, 0o644))
    for name in removes:
        remove_file(os.path.join(dest, name))


# The old name of write_planned (it writes any planned files, not only rendered manifests); kept
# for callers on branches in flight.
apply_render = write_planned


def write_changes(changes, backup_suffix=None):
    """Apply ``{path: (old or None, new or None)}`` (absolute paths; new None removes the file).

    Returns [{"path", "backup", "existed"}] in path order: what a rollback needs (restore the
    backup, or remove a file that did not exist)."""
    done = []
    for path in sorted(changes):
        old, new = changes[path]
        if new is None:
            if old is not None:
                done.append({"path": path, "backup": remove_file(path, backup_suffix), "existed": True})
            continue
        done.append({"path": path, "backup": write_file(path, new, None, backup_suffix), "existed": old is not None})
    return done


def sync_files(dest, wanted, removes=(), modes=None, check_mode=False, diff=False):
    """Plan, write (unless ``check_mode``) and describe the files ``wanted`` ({name: text}) under
    ``dest``, removing ``removes``: the result keys every file-writing module returns
    (``changed``, ``written``, ``removed`` and, when ``diff``, ``diff``). A symbolic link on the way to
    ``dest`` or to any of those files is refused before anything changes (``refuse_links``)."""
    refuse_links(dest, list(wanted) + list(removes))
    writes = plan_files(dest, wanted, modes)
    removes = [name for name in removes if os.path.lexists(os.path.join(dest, name))]
    if (writes or removes) and not check_mode:
        write_planned(dest, writes, removes, modes)
    result = dict(changed=bool(writes or removes), written=[os.path.join(dest, n) for n in sorted(writes)],
                  removed=[os.path.join(dest, n) for n in removes])
    if diff:
        result["diff"] = file_diffs(dest, writes, removes)
    return result


def inside(dest, name):
    """``dest``/``name`` when ``name`` is a relative path that stays inside ``dest``, else GpufleetError."""
    norm = os.path.normpath(name) if name else ""
    if not norm or os.path.isabs(name) or norm == "." or norm == ".." or norm.startswith(".." + os.sep):
        raise GpufleetError("%r is not a path inside %s (relative, without '..')" % (name, dest))
    return os.path.join(dest, norm)


def tree_listing(dest):
    """[{path, size, checksum (SHA-1)}] of every regular file under ``dest``, sorted by path; hidden
    files and directories (gpufleet's own marks, such as ``.gpufleet-build``) are left out."""
    out = []
    for root, dirs, names in os.walk(dest):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            path = os.path.join(root, name)
            if name.startswith(".") or not os.path.isfile(path) or os.path.islink(path):
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            out.append(dict(path=path, size=len(data), checksum=hashlib.sha1(data).hexdigest()))
    return sorted(out, key=lambda entry: entry["path"])


def select_listing(dest, listing, suffixes=(), skip=()):
    """The entries of ``listing`` (from ``tree_listing``) whose name ends with one of ``suffixes`` (all
    when empty) and that are not ``skip`` names (relative to ``dest``) or under them; returns them and
    their names relative to ``dest``."""
    skip = [os.path.normpath(name) for name in skip]
    kept, names = [], []
    for entry in listing:
        name = os.path.relpath(entry["path"], dest)
        if suffixes and not name.endswith(tuple(suffixes)):
            continue
        if any(name == s or name.startswith(s + os.sep) for s in skip):
            continue
        kept.append(entry)
        names.append(name)
    return kept, names


def listing_artifacts(listing, names, max_bytes):
    """``listing`` (from ``tree_listing``) and its ``names`` (from ``select_listing``) as job artifacts:
    {sizes, sha1, contents, contents_left_out}. ``contents`` (the files' text) only while all sizes together
    are at most ``max_bytes``; otherwise it is empty and ``contents_left_out`` is true."""
    left_out = sum(entry["size"] for entry in listing) > max_bytes
    contents = {}
    if not left_out:
        for name, entry in zip(names, listing):
            with open(entry["path"], "rb") as handle:
                contents[name] = handle.read().decode("utf-8", errors="replace")
    return dict(sizes=dict(zip(names, (entry["size"] for entry in listing))),
                sha1=dict(zip(names, (entry["checksum"] for entry in listing))),
                contents=contents, contents_left_out=left_out)


def sync_tree(dest, wanted, absent=(), mode=0o644, check_mode=False, diff=False, listing=False):
    """``sync_files`` for files in sub-directories of ``dest``, plus removal of whole directories:
    writes ``wanted`` ({relative name: text}), removes each name of ``absent`` (a file, or a directory
    with its content), optionally lists the files left. Every name is checked to stay inside ``dest``,
    and ``dest`` to hold no symbolic link (nor to be reached through one), before anything changes."""
    for name in list(wanted) + list(absent):
        inside(dest, name)
    refuse_links(dest, list(wanted) + list(absent), tree=True)
    writes = plan_files(dest, dict((os.path.normpath(n), t) for n, t in wanted.items()),
                        dict((os.path.normpath(n), mode) for n in wanted))
    gone = []
    for name in absent:
        path = inside(dest, name)
        if os.path.isdir(path) and not os.path.islink(path):
            gone.extend(os.path.relpath(e["path"], dest) for e in tree_listing(path))
            gone.append(os.path.normpath(name) + os.sep)
        elif os.path.lexists(path):
            gone.append(os.path.normpath(name))
    if (writes or gone) and not check_mode:
        if not os.path.isdir(dest):
            os.makedirs(dest, 0o755)
        for name, (_old, text) in sorted(writes.items()):
            write_file(os.path.join(dest, name), text, mode)
        for name in absent:
            path = inside(dest, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)
    result = dict(changed=bool(writes or gone), written=[os.path.join(dest, n) for n in sorted(writes)],
                  removed=[os.path.join(dest, n) for n in gone])
    if diff:
        result["diff"] = file_diffs(dest, writes, [n for n in gone if not n.endswith(os.sep)])
    if listing:
        result["listing"] = tree_listing(dest) if os.path.isdir(dest) else []
    return result
