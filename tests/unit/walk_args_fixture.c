/*
 * walk_args_fixture.c - a shared object for test_walk_args.c, compiled for
 * aarch64 by the cross compiler: cp_args_call passes two strings'
 * addresses in the seventh and eighth argument registers (x6, x7) to a
 * function of its own (a direct bl; noipa: no clone that drops them).
 */
__attribute__((visibility("hidden"))) const char cp_args_seventh[] = "seventh";
__attribute__((visibility("hidden"))) const char cp_args_eighth[] = "eighth";

__attribute__((noipa, visibility("hidden"))) long cp_args_sink(long a, long b, long c, long d, long e, long f,
								 const char *g, const char *h)
{
	return a + b + c + d + e + f + g[0] + h[0];
}

long cp_args_call(void)
{
	return cp_args_sink(1, 2, 3, 4, 5, 6, cp_args_seventh, cp_args_eighth) + 1; /* a bl, not a tail call */
}
