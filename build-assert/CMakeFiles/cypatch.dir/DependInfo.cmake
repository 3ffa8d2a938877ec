
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/patcher/arch/arch.c" "CMakeFiles/cypatch.dir/patcher/arch/arch.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/arch.c.o.d"
  "/work/main/patcher/arch/code.c" "CMakeFiles/cypatch.dir/patcher/arch/code.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/code.c.o.d"
  "/work/main/patcher/arch/frame.c" "CMakeFiles/cypatch.dir/patcher/arch/frame.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/frame.c.o.d"
  "/work/main/patcher/arch/x86_64/decode.c" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/decode.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/decode.c.o.d"
  "/work/main/patcher/arch/x86_64/encode.c" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/encode.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/encode.c.o.d"
  "/work/main/patcher/arch/x86_64/facts.c" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/facts.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/facts.c.o.d"
  "/work/main/patcher/arch/x86_64/frame_eval.c" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/frame_eval.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/frame_eval.c.o.d"
  "/work/main/patcher/arch/x86_64/target.c" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/target.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/target.c.o.d"
  "/work/main/patcher/arch/x86_64/walk.c" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/walk.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/arch/x86_64/walk.c.o.d"
  "/work/main/patcher/cython/blob.c" "CMakeFiles/cypatch.dir/patcher/cython/blob.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/cython/blob.c.o.d"
  "/work/main/patcher/cython/cython.c" "CMakeFiles/cypatch.dir/patcher/cython/cython.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/cython/cython.c.o.d"
  "/work/main/patcher/elf/elf_view.c" "CMakeFiles/cypatch.dir/patcher/elf/elf_view.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/elf_view.c.o.d"
  "/work/main/patcher/elf/fallback_view.c" "CMakeFiles/cypatch.dir/patcher/elf/fallback_view.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/fallback_view.c.o.d"
  "/work/main/patcher/elf/functions.c" "CMakeFiles/cypatch.dir/patcher/elf/functions.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/functions.c.o.d"
  "/work/main/patcher/elf/image.c" "CMakeFiles/cypatch.dir/patcher/elf/image.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/image.c.o.d"
  "/work/main/patcher/elf/load.c" "CMakeFiles/cypatch.dir/patcher/elf/load.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/load.c.o.d"
  "/work/main/patcher/elf/open_input.c" "CMakeFiles/cypatch.dir/patcher/elf/open_input.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/open_input.c.o.d"
  "/work/main/patcher/elf/relocs.c" "CMakeFiles/cypatch.dir/patcher/elf/relocs.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/relocs.c.o.d"
  "/work/main/patcher/elf/validate.c" "CMakeFiles/cypatch.dir/patcher/elf/validate.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/elf/validate.c.o.d"
  "/work/main/patcher/emit/buildid.c" "CMakeFiles/cypatch.dir/patcher/emit/buildid.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/emit/buildid.c.o.d"
  "/work/main/patcher/emit/emit.c" "CMakeFiles/cypatch.dir/patcher/emit/emit.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/emit/emit.c.o.d"
  "/work/main/patcher/emit/patch.c" "CMakeFiles/cypatch.dir/patcher/emit/patch.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/emit/patch.c.o.d"
  "/work/main/patcher/emit/rescan.c" "CMakeFiles/cypatch.dir/patcher/emit/rescan.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/emit/rescan.c.o.d"
  "/work/main/patcher/plan/edits.c" "CMakeFiles/cypatch.dir/patcher/plan/edits.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/plan/edits.c.o.d"
  "/work/main/patcher/plan/forms.c" "CMakeFiles/cypatch.dir/patcher/plan/forms.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/plan/forms.c.o.d"
  "/work/main/patcher/plan/place.c" "CMakeFiles/cypatch.dir/patcher/plan/place.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/plan/place.c.o.d"
  "/work/main/patcher/plan/plan.c" "CMakeFiles/cypatch.dir/patcher/plan/plan.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/plan/plan.c.o.d"
  "/work/main/patcher/plan/plan_blob.c" "CMakeFiles/cypatch.dir/patcher/plan/plan_blob.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/plan/plan_blob.c.o.d"
  "/work/main/patcher/plan/plan_fallback.c" "CMakeFiles/cypatch.dir/patcher/plan/plan_fallback.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/plan/plan_fallback.c.o.d"
  "/work/main/patcher/predict/exports.c" "CMakeFiles/cypatch.dir/patcher/predict/exports.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/predict/exports.c.o.d"
  "/work/main/patcher/predict/import_chain.c" "CMakeFiles/cypatch.dir/patcher/predict/import_chain.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/predict/import_chain.c.o.d"
  "/work/main/patcher/predict/import_time.c" "CMakeFiles/cypatch.dir/patcher/predict/import_time.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/predict/import_time.c.o.d"
  "/work/main/patcher/predict/predict.c" "CMakeFiles/cypatch.dir/patcher/predict/predict.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/predict/predict.c.o.d"
  "/work/main/patcher/predict/pystmt.c" "CMakeFiles/cypatch.dir/patcher/predict/pystmt.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/predict/pystmt.c.o.d"
  "/work/main/patcher/repair/pysource.c" "CMakeFiles/cypatch.dir/patcher/repair/pysource.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/repair/pysource.c.o.d"
  "/work/main/patcher/repair/repair.c" "CMakeFiles/cypatch.dir/patcher/repair/repair.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/repair/repair.c.o.d"
  "/work/main/patcher/repair/repair_write.c" "CMakeFiles/cypatch.dir/patcher/repair/repair_write.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/repair/repair_write.c.o.d"
  "/work/main/patcher/repair/requires.c" "CMakeFiles/cypatch.dir/patcher/repair/requires.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/repair/requires.c.o.d"
  "/work/main/patcher/rules/rules.c" "CMakeFiles/cypatch.dir/patcher/rules/rules.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/rules/rules.c.o.d"
  "/work/main/patcher/scan/reach.c" "CMakeFiles/cypatch.dir/patcher/scan/reach.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/reach.c.o.d"
  "/work/main/patcher/scan/report_json.c" "CMakeFiles/cypatch.dir/patcher/scan/report_json.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/report_json.c.o.d"
  "/work/main/patcher/scan/report_text.c" "CMakeFiles/cypatch.dir/patcher/scan/report_text.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/report_text.c.o.d"
  "/work/main/patcher/scan/scan.c" "CMakeFiles/cypatch.dir/patcher/scan/scan.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan.c.o.d"
  "/work/main/patcher/scan/scan_blob.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_blob.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_blob.c.o.d"
  "/work/main/patcher/scan/scan_code.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_code.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_code.c.o.d"
  "/work/main/patcher/scan/scan_imports.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_imports.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_imports.c.o.d"
  "/work/main/patcher/scan/scan_names.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_names.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_names.c.o.d"
  "/work/main/patcher/scan/scan_pyimports.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_pyimports.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_pyimports.c.o.d"
  "/work/main/patcher/scan/scan_result.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_result.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_result.c.o.d"
  "/work/main/patcher/scan/scan_strings.c" "CMakeFiles/cypatch.dir/patcher/scan/scan_strings.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/scan/scan_strings.c.o.d"
  "/work/main/patcher/util/cleanup_on_signal.c" "CMakeFiles/cypatch.dir/patcher/util/cleanup_on_signal.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/cleanup_on_signal.c.o.d"
  "/work/main/patcher/util/copy_ahead.c" "CMakeFiles/cypatch.dir/patcher/util/copy_ahead.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/copy_ahead.c.o.d"
  "/work/main/patcher/util/error.c" "CMakeFiles/cypatch.dir/patcher/util/error.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/error.c.o.d"
  "/work/main/patcher/util/find.c" "CMakeFiles/cypatch.dir/patcher/util/find.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/find.c.o.d"
  "/work/main/patcher/util/map_guard.c" "CMakeFiles/cypatch.dir/patcher/util/map_guard.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/map_guard.c.o.d"
  "/work/main/patcher/util/names.c" "CMakeFiles/cypatch.dir/patcher/util/names.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/names.c.o.d"
  "/work/main/patcher/util/write.c" "CMakeFiles/cypatch.dir/patcher/util/write.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/util/write.c.o.d"
  "/work/main/patcher/verify/verify.c" "CMakeFiles/cypatch.dir/patcher/verify/verify.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/verify/verify.c.o.d"
  "/work/main/patcher/wheel/record.c" "CMakeFiles/cypatch.dir/patcher/wheel/record.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/record.c.o.d"
  "/work/main/patcher/wheel/wheel.c" "CMakeFiles/cypatch.dir/patcher/wheel/wheel.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/wheel.c.o.d"
  "/work/main/patcher/wheel/wheel_name.c" "CMakeFiles/cypatch.dir/patcher/wheel/wheel_name.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/wheel_name.c.o.d"
  "/work/main/patcher/wheel/zip_deflated.c" "CMakeFiles/cypatch.dir/patcher/wheel/zip_deflated.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/zip_deflated.c.o.d"
  "/work/main/patcher/wheel/zip_layout.c" "CMakeFiles/cypatch.dir/patcher/wheel/zip_layout.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/zip_layout.c.o.d"
  "/work/main/patcher/wheel/zip_source.c" "CMakeFiles/cypatch.dir/patcher/wheel/zip_source.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/zip_source.c.o.d"
  "/work/main/patcher/wheel/zip_splice.c" "CMakeFiles/cypatch.dir/patcher/wheel/zip_splice.c.o" "gcc" "CMakeFiles/cypatch.dir/patcher/wheel/zip_splice.c.o.d"
  "/work/main/build-assert/stub_blob.c" "CMakeFiles/cypatch.dir/stub_blob.c.o" "gcc" "CMakeFiles/cypatch.dir/stub_blob.c.o.d"
  "/work/main/build-assert/verify_child.c" "CMakeFiles/cypatch.dir/verify_child.c.o" "gcc" "CMakeFiles/cypatch.dir/verify_child.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
