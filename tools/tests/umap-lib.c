// SPDX-License-Identifier: GPL-2.0
/* The library umap-workload dlopen()s: a mapping made after the exec. */
int umap_lib_answer(void);

int umap_lib_answer(void)
{
	return 42;
}
