/*
 * frame_eval.h - the old name of arch/frame.h, kept until plan_blob.c
 * includes that (issue 19 moves the frame evaluator's interface there).
 */
#include "arch/frame.h"
