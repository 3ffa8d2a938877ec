/* test_rules.c - the rules loader: the bundled file, good and bad rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rules/rules.h"

static const char *rules_file;

static const char base[] =
	"[layouts]\n"
	"old = first\n"
	"new = second\n"
	"[modules old new]\n"
	"pkg.a = pkg.sub.a\n";

static void bundled_rules_map_both_ways(void **state)
{
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };
	int legacy, bindings;

	(void)state;
	assert_int_equal(cp_rules_load_file(r, rules_file, &err), CP_OK);
	legacy = cp_rules_layout_index(r, "legacy");
	bindings = cp_rules_layout_index(r, "bindings");
	assert_true(legacy >= 0 && bindings >= 0);
	assert_string_equal(cp_rules_map(r, "cuda.ccudart", bindings), "cuda.bindings.cyruntime");
	assert_string_equal(cp_rules_map(r, "cuda.bindings.cydriver", legacy), "cuda.ccuda");
	assert_string_equal(cp_rules_map(r, "cuda._lib.ccudart.ccudart", bindings),
			    "cuda.bindings._lib.cyruntime.cyruntime");
	assert_null(cp_rules_map(r, "cuda.ccudart", legacy));
	assert_null(cp_rules_map(r, "numpy", bindings));
	assert_int_equal(cp_rules_module_layout(r, "cuda.bindings.nvrtc"), bindings);
	assert_int_equal(cp_rules_package_layout(r, "cuda.bindings"), bindings);
	assert_int_equal(cp_rules_package_layout(r, "cuda._lib"), legacy);
	assert_int_equal(cp_rules_package_layout(r, "cuda"), -1); /* both layouts */
	assert_int_equal((int)r->nmod, 14);
	assert_int_equal((int)r->nmangle, 6);
	cp_rules_free(r);
}

/* cuda.bindings.cynvvm came with cuda-python 12.8: the rules map no
 * counterpart, and only the package tells its layout. */
static void unmapped_modules_of_one_layout_packages(void **state)
{
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };
	const char *pkg = NULL;
	int bindings, legacy;

	(void)state;
	assert_int_equal(cp_rules_load_file(r, rules_file, &err), CP_OK);
	bindings = cp_rules_layout_index(r, "bindings");
	legacy = cp_rules_layout_index(r, "legacy");
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings.cynvvm", 20, &pkg), bindings);
	assert_string_equal(pkg, "cuda.bindings");
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings._internal.nvvm", 28, &pkg), bindings);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda._lib.x", 11, &pkg), legacy);
	/* a length short of the string: only the name it spans */
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings.cynvvmX", 20, &pkg), bindings);
	/* mapped, a package, a mapped module's attribute, outside, not a name */
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings.cydriver", 22, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings", 13, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings.driver.CUlinkState", 32, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.core._event", 16, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.x", 6, &pkg), -1); /* cuda: both layouts */
	assert_int_equal(cp_rules_unmapped_layout(r, "see cuda.bindings.x", 19, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings.", 14, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings..x", 16, &pkg), -1);
	assert_int_equal(cp_rules_unmapped_layout(r, "cuda.bindings.9x", 16, &pkg), -1);
	cp_rules_free(r);
}

static void mangling_follows_cython(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(cp_mangle_prefix("cuda.bindings.cydriver", buf, sizeof(buf)), 34);
	assert_string_equal(buf, "__pyx_t_4cuda_8bindings_8cydriver_");
	assert_string_equal((cp_mangle_prefix("cuda.ccuda", buf, sizeof(buf)), buf), "__pyx_t_4cuda_5ccuda_");
	assert_int_equal(cp_mangle_prefix("cuda.ccuda", buf, 10), -1);
}

static void user_rules_add_to_bundled(void **state)
{
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };

	(void)state;
	assert_int_equal(cp_rules_load_file(r, rules_file, &err), CP_OK);
	assert_int_equal(cp_rules_load_string(r, "user.rules",
					      "[modules legacy bindings]\nrmm._lib = rmm.pylibrmm\n", &err),
			 CP_OK);
	assert_string_equal(cp_rules_map(r, "rmm._lib", cp_rules_layout_index(r, "bindings")),
			    "rmm.pylibrmm");
	cp_rules_free(r);
}

/* Loads base + extra as "t.rules" and expects an error whose message is
 * exactly `expect`. */
static void expect_error(const char *extra, const char *expect)
{
	char text[1024];
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };

	snprintf(text, sizeof(text), "%s%s", base, extra);
	assert_int_equal(cp_rules_load_string(r, "t.rules", text, &err), CP_E_RULES);
	assert_int_equal(err.code, CP_E_RULES);
	assert_string_equal(err.msg, expect);
	cp_rules_free(r);
}

static void good_rules_load(void **state)
{
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };

	(void)state;
	assert_int_equal(cp_rules_load_string(r, "t.rules",
		"# comment\n; comment\n[layouts]\nold = x ; inline comment\nnew = y\n"
		"[modules old new]\npkg.a = pkg.sub.a\n[mangled old new]\n"
		"__pyx_t_3pkg_1a_ = __pyx_t_3pkg_3sub_1a_\n", &err), CP_OK);
	assert_string_equal(cp_rules_map(r, "pkg.a", 1), "pkg.sub.a");
	cp_rules_free(r);
}

static void bad_rules_are_refused_with_file_and_line(void **state)
{
	(void)state;
	expect_error("pkg.b = pkg.sub.a\n",
		     "t.rules:6: module 'pkg.sub.a' is already mapped at t.rules:5 (a module may be mapped "
		     "once; mapping it again would make a duplicate, a chain or a cycle)");
	expect_error("pkg.a = pkg.other\n",
		     "t.rules:6: module 'pkg.a' is already mapped at t.rules:5 (a module may be mapped "
		     "once; mapping it again would make a duplicate, a chain or a cycle)");
	expect_error("pkg.sub.a = pkg.a\n", /* a cycle */
		     "t.rules:6: module 'pkg.sub.a' is already mapped at t.rules:5 (a module may be mapped "
		     "once; mapping it again would make a duplicate, a chain or a cycle)");
	expect_error("pkg.x = pkg.x\n", "t.rules:6: module 'pkg.x' is mapped onto itself");
	expect_error("pkg.b = not a name\n", "t.rules:6: 'not a name' is not a dotted module name");
	expect_error("[modules old nowhere]\na.b = c.d\n",
		     "t.rules:7: layout 'nowhere' is not declared in [layouts]");
	expect_error("[modules old]\na.b = c.d\n",
		     "t.rules:7: section [modules old] must name exactly two layouts");
	expect_error("[modules old old]\na.b = c.d\n",
		     "t.rules:7: section [modules old old] maps a layout onto itself");
	expect_error("[colours]\nred = 1\n", "t.rules:7: unknown section [colours]");
	expect_error("this line has no equals sign\n",
		     "t.rules:6: syntax error (expected '[section]', 'name = value' or a comment)");
	expect_error("[mangled old new]\n__pyx_t_3pkg_1a_ = __pyx_t_3pkg_5wrong_\n",
		     "t.rules:7: mangled pair for '__pyx_t_3pkg_1a_' matches no module pair declared before it");
	expect_error("[layouts]\n9bad = x\n", "t.rules:7: layout name '9bad' is not an identifier");
	expect_error("[errors]\nCUresult = eight\n", "t.rules:7: error value 'eight' is not a 32-bit decimal integer");
	expect_error("[errors]\nCUresult = 4294967296\n",
		     "t.rules:7: error value '4294967296' is not a 32-bit decimal integer");
	expect_error("[errors]\nnot a type = 1\n", "t.rules:7: error type 'not a type' is not an identifier");
	expect_error("[errors]\nCUresult = 1\nCUresult = 2\n", "t.rules:8: error type 'CUresult' is listed twice");
}

/* [errors]: a signature's return type, followed by " (", finds its value;
 * a longer type that starts with it, or a pointer to it, does not. */
static void error_values_by_return_type(void **state)
{
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };
	const struct cp_error_value *e;

	(void)state;
	assert_int_equal(cp_rules_load_file(r, rules_file, &err), CP_OK);
	e = cp_rules_error_type(r, "CUresult (unsigned int)");
	assert_non_null(e);
	assert_string_equal(e->type, "CUresult");
	assert_int_equal(e->value, 801);
	assert_int_equal(cp_rules_error_type(r, "cudaError_t (int *)")->value, 801);
	assert_null(cp_rules_error_type(r, "CUresult *(int)"));
	assert_null(cp_rules_error_type(r, "CUresultX (int)"));
	assert_null(cp_rules_error_type(r, "char const *(nvrtcResult)"));
	cp_rules_free(r);
}

static void outside_section_and_missing_layouts(void **state)
{
	cp_rules *r = cp_rules_new();
	cp_error err = { CP_OK, "" };

	(void)state;
	assert_int_equal(cp_rules_load_string(r, "t.rules", "a = b\n", &err), CP_E_RULES);
	assert_string_equal(err.msg, "t.rules:1: entry 'a' stands outside any section");
	cp_rules_free(r);
	r = cp_rules_new();
	assert_int_equal(cp_rules_load_string(r, "t.rules", "[layouts]\nonly = one\n", &err), CP_E_RULES);
	assert_string_equal(err.msg, "t.rules: declares fewer than two layouts");
	cp_rules_free(r);
	r = cp_rules_new();
	assert_int_equal(cp_rules_load_file(r, "/nonexistent/x.rules", &err), CP_E_RULES);
	assert_string_equal(err.msg, "/nonexistent/x.rules: cannot open rules file");
	cp_rules_free(r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bundled_rules_map_both_ways),
		cmocka_unit_test(unmapped_modules_of_one_layout_packages),
		cmocka_unit_test(mangling_follows_cython),
		cmocka_unit_test(user_rules_add_to_bundled),
		cmocka_unit_test(good_rules_load),
		cmocka_unit_test(bad_rules_are_refused_with_file_and_line),
		cmocka_unit_test(error_values_by_return_type),
		cmocka_unit_test(outside_section_and_missing_layouts),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s RULES_FILE\n", argv[0]);
		return 2;
	}
	rules_file = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
