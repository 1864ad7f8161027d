# Families of tests that configure leaves out, each with the reason, written to
# test_families_not_registered.txt in the build folder. tools/test.sh's summary names each of them
# beside the tests that skipped themselves at run time, so that no family goes missing in silence.
set_property(GLOBAL PROPERTY COLL_FAMILIES_NOT_REGISTERED "")

# Says at configure time that FAMILY's tests are not registered, and why (a status line), and
# keeps it for the summary.
function(coll_family_not_registered family reason)
  message(STATUS "${family} tests not registered: ${reason}")
  string(REPLACE ";" "," reason "${reason}")
  set_property(GLOBAL APPEND PROPERTY COLL_FAMILIES_NOT_REGISTERED "${family}\t${reason}")
endfunction()

# Called once at the end of the top-level configure: one line per family, "family<TAB>reason".
function(coll_write_family_report)
  get_property(entries GLOBAL PROPERTY COLL_FAMILIES_NOT_REGISTERED)
  set(text "")
  foreach(entry IN LISTS entries)
    string(APPEND text "${entry}\n")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/test_families_not_registered.txt "${text}")
endfunction()
