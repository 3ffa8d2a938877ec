/*
 * test_stub_abi.c - the facts of CPython's ABI the fallback stub relies on
 * (patcher/stub/fallback_stub.c), checked against Python.h.
 */
#include <Python.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void test_object_header(void **state)
{
	(void)state;
	assert_int_equal(offsetof(PyObject, ob_refcnt), 0);
	assert_int_equal(offsetof(PyObject, ob_type), 8);
}

static void test_type_call_slot(void **state)
{
	(void)state;
	assert_int_equal(offsetof(PyTypeObject, tp_call), 128);
	assert_int_equal(offsetof(PyTypeObject, tp_getattro), 144);
	assert_int_equal(offsetof(PyTypeObject, tp_flags), 168);
	assert_int_equal(Py_TPFLAGS_LIST_SUBCLASS, 1ul << 25);
	assert_int_equal(Py_TPFLAGS_TUPLE_SUBCLASS, 1ul << 26);
}

static void test_tuple_items(void **state)
{
	(void)state;
	assert_int_equal(offsetof(PyVarObject, ob_size), 16);
	assert_int_equal(offsetof(PyTupleObject, ob_item), 24);
	assert_int_equal(offsetof(PyListObject, ob_item), 24);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_header),
		cmocka_unit_test(test_type_call_slot),
		cmocka_unit_test(test_tuple_items),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
