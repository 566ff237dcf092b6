console.log("a");
</SCRIPT><b>x</b>
