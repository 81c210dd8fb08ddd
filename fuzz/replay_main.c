/*
 * replay_main.c - a main() for fuzz targets built without libFuzzer: feeds
 * every regular file of the directories (or the files) named on the command
 * line to LLVMFuzzerTestOneInput, in name order, one at a time.
 *
 * A target reports a finding by aborting, so a replay that returns is a
 * pass. Replaying nothing is an error: an empty or missing corpus must not
 * look like a green test.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

static int
replay_file(const char *path)
{
	FILE *f;
	uint8_t *buf;
	long len;

	if ((f = fopen(path, "rb")) == NULL) {
		perror(path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		fclose(f);
		return -1;
	}
	/* One extra byte so that an empty file still gets a valid pointer. */
	if ((buf = malloc((size_t)len + 1)) == NULL) {
		fclose(f);
		fprintf(stderr, "%s: out of memory\n", path);
		return -1;
	}
	if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
		perror(path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	fprintf(stderr, "replay: %s (%ld bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file in @dir; returns the count or -1. */
static int
replay_dir(const char *dir)
{
	struct dirent *e;
	struct stat st;
	char **names = NULL, **grown, *path;
	size_t n = 0, cap = 0, i;
	int count = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		perror(dir);
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap == 0 ? 64 : 2 * cap;
			if ((grown = realloc(names, cap * sizeof *names)) ==
			    NULL)
				goto oom;
			names = grown;
		}
		if ((path = malloc(strlen(dir) + strlen(e->d_name) + 2)) ==
		    NULL)
			goto oom;
		sprintf(path, "%s/%s", dir, e->d_name);
		names[n++] = path;
	}
	closedir(d);
	d = NULL;
	if (n > 0)
		qsort(names, n, sizeof *names, compare_names);
	for (i = 0; i < n; i++) {
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(names[i]) != 0)
				count = -1;
			else if (count >= 0)
				count++;
		}
		free(names[i]);
	}
	free(names);
	return count;
oom:
	fprintf(stderr, "%s: out of memory\n", dir);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (d != NULL)
		closedir(d);
	return -1;
}

int
main(int argc, char **argv)
{
	struct stat st;
	int total = 0, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode))
			n = replay_dir(argv[i]);
		else
			n = replay_file(argv[i]) == 0 ? 1 : -1;
		if (n < 0)
			return 1;
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	printf("replay: %d inputs passed\n", total);
	return 0;
}
