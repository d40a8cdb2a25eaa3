// The ids and times the examples of the document share (examples.ts and the files next to it).
export const SESSION_ID = '0193a5c2-7e4b-7d21-9c3a-5b8e2f1d4a60';
export const TURN_ID = '0193a5c2-7e52-7f10-8b1c-2a9d4e6f8b01';
export const RUN_ID = '0193a5c2-7e53-7a44-a0d2-6c1e3b5f7d02';
export const INPUT_ID = '0193a5c2-7e4c-70aa-b3e5-8d2f4a6c9e03';
export const USER_ID = '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e09';
export const AT = 1733400000;
export const MODEL = 'scripted:echo';
