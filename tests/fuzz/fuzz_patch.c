/*
 * fuzz_patch.c - the whole patch pipeline (load, scan, plan, emit,
 * re-sign, write, check) on mutated binaries. The input's size picks the
 * mode (legacy, bindings or fallback), so that each input is one run of the
 * pipeline and a reproducer replays the same mode. The output, when there
 * is one, passed cypatch's own check, so it must load again.
 */
#include "fuzz_input.h"
#include "cypatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *const layouts[] = { "legacy", "bindings", "fallback" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[512], out[512];
	struct cp_patch_opts o = { 0 };
	struct cp_patch_result res;
	cp_image *img;
	cp_error err;
	const size_t nlayouts = sizeof(layouts) / sizeof(layouts[0]);

	snprintf(in, sizeof(in), "%s/in.so", fuzz_dir());
	snprintf(out, sizeof(out), "%s/out.so", fuzz_dir());
	if (fuzz_write_file(in, data, size) < 0)
		return 0;
	o.layout = layouts[size % nlayouts];
	if (cp_patch_file(in, out, fuzz_rules(), &o, &res, &err) == CP_OK &&
	    res.outcome == CP_PATCHED) {
		if (cp_image_open(out, &img, &err) != CP_OK) {
			fprintf(stderr, "fuzz: patched output does not load: %s\n", err.msg);
			abort();
		}
		cp_image_close(img);
	}
	unlink(out);
	unlink(in);
	return 0;
}
