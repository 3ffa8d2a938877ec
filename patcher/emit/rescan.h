/* rescan.h - proving a retargeted file before it replaces anything: the output scanned again. */
#ifndef CP_RESCAN_H
#define CP_RESCAN_H

#include "emit/emit.h"
#include "plan/plan.h"

/*
 * Re-reads the output at `path` (scanned with the same rules) and refuses it
 * unless: no reference to a layout other than the target is left (a moved
 * string's old bytes stay, with nothing pointing at them), every reference
 * of the input has its counterpart,
 * every redirected operand decodes to the planned address, the output holds
 * the delta d, and inside the delta's runs no byte differs from the input
 * outside the edits, the new space and the ELF header's table fields.
 * Only the functions whose bytes changed are walked again (full_check: all
 * code as well, and the two walks must agree; scan/scan_splice.c).
 */
cp_status cp_rescan(const cp_image *in, const cp_scan *in_scan, const struct cp_plan *plan,
		   const char *path, const struct cp_delta *d, bool full_check, cp_error *err);

#endif
