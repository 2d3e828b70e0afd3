/**
 * Shapes that pass TIMESTAMP_PATTERN but name no instant (issue 10, finding 5): shared by the tests
 * of parseInstant, isKeyActive and the key file, which must all refuse them.
 */
export const IMPOSSIBLE_INSTANTS = [
  '2030-13-01T00:00:00Z',
  '2030-00-10T00:00:00Z',
  '2027-01-01T23:59:60Z',
  '2027-02-30T00:00:00Z',
  '2027-02-29T00:00:00Z',
  '2027-04-31T00:00:00Z',
  '2027-01-01T24:00:00Z',
  '2027-01-01T12:60:00Z',
  '2027-01-00T00:00:00Z',
];
