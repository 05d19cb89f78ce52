# -*- coding: utf-8 -*-
# Third-party code carried inside the collection so that modules run with the same, tested
# version on every managed node. See README.md in this folder.
